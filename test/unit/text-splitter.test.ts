import { describe, expect, it } from 'vitest';
import { CUSTOM_SPLIT_SIGN, isMarkdownTable, splitText } from '../../src/domain/text-splitter.js';

const sentences = (count: number, word = 'Sentence') =>
  Array.from({ length: count }, (_, i) => `${word} ${i} goes here.`).join(' ');
const cjkSentences = (count: number) => Array.from({ length: count }, (_, i) => `第${i}句话在这里。`).join('');
const tableOf = (rows: number) =>
  `| name | value |\n|:---|---:|\n${Array.from({ length: rows }, (_, i) => `| row ${i} | value ${i} |`).join('\n')}`;

describe('splitText: small and empty inputs', () => {
  it.each([
    ['empty', ''],
    ['spaces', '   '],
    ['newlines', '\n\n\t\n'],
  ])('%s text gives no chunks', (_name, text) => {
    expect(splitText({ text, chunkLen: 100 })).toEqual({ chunks: [], chars: 0 });
  });

  it.each([
    ['one line', 'Hello world.', ['Hello world.']],
    ['trimmed', '  Hello world.  \n', ['Hello world.']],
    ['CRLF normalised', 'line one\r\nline two', ['line one\nline two']],
    ['short markdown', '# T\nbody text', ['# T\nbody text']],
  ])('%s stays one chunk', (_name, text, expected) => {
    const result = splitText({ text, chunkLen: 100 });
    expect(result.chunks).toEqual(expected);
    expect(result.chars).toBe(expected.join('').length);
  });

  it.each([0, -5, Number.NaN, Number.POSITIVE_INFINITY])('rejects chunkLen %s (callers validate first)', (chunkLen) => {
    expect(() => splitText({ text: 'abc', chunkLen })).toThrow(RangeError);
  });
});

describe('splitText: markdown headings', () => {
  const doc = [
    '# Guide',
    'Intro line.',
    '## Install',
    sentences(20, 'alpha'),
    '',
    sentences(18, 'beta'),
    '## Usage',
    'Short usage text that is more than thirty characters long.',
  ].join('\n');
  const { chunks } = splitText({ text: doc, chunkLen: 300 });

  it('prefixes every chunk of a section with its heading path', () => {
    expect(chunks.length).toBe(3);
    expect(chunks[0]).toMatch(/^# Guide\nIntro line\.\n## Install\nalpha 0 goes here\./);
    expect(chunks[1]).toMatch(/^# Guide\n## Install\nbeta 0 goes here\./);
    expect(chunks[2]).toBe('# Guide\n## Usage\nShort usage text that is more than thirty characters long.');
  });

  it('keeps each paragraph within one chunk', () => {
    expect(chunks.filter((chunk) => chunk.includes('alpha 19 goes here.'))).toHaveLength(1);
    expect(chunks.some((chunk) => chunk.includes('alpha') && chunk.includes('beta'))).toBe(false);
  });

  it('cuts a run of headings without text (a table of contents) at the chunk size, losing none', () => {
    // Short headings: each alone is too small to be a chunk, so they are carried into the next.
    const headings = Array.from({ length: 2000 }, (_, i) => `## Chapter ${i}`);
    const { chunks } = splitText({ text: headings.join('\n'), chunkLen: 500 });
    expect(chunks.length).toBeGreaterThan(10);
    // A section may grow to the heading step's factor × chunkLen; one chunk of all 2,000 (~30 KB) may not.
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(1.2 * 500);
    const joined = chunks.join('\n');
    for (const heading of headings) expect(joined).toContain(heading);
  });

  it('repeats a heading on every chunk of its section only while it is short; a longer one is cut like text', () => {
    const long = `# ${'heading words '.repeat(2000)}`;
    const body = sentences(400);
    const { chunks, chars } = splitText({ text: `${long}\n${body}`, chunkLen: 100 });
    // Nothing is lost, and the heading is not copied into each of the ~150 chunks of its section.
    expect(chars).toBeLessThan(3 * (long.length + body.length));
    expect(chunks.filter((chunk) => chunk.startsWith('# heading words')).length).toBe(1);
    const joined = chunks.join(' ');
    for (const i of [0, 199, 399]) expect(joined).toContain(`Sentence ${i} goes here.`);
    // A heading of ordinary length still leads every chunk of its section.
    const short = splitText({ text: `# Short title\n${body}`, chunkLen: 100 });
    expect(short.chunks.length).toBeGreaterThan(10);
    expect(short.chunks.every((chunk) => chunk.startsWith('# Short title\n'))).toBe(true);
  });

  it('nests four heading levels', () => {
    const text = `# A\n## B\n### C\n#### D\n${sentences(30)}`;
    const result = splitText({ text, chunkLen: 200 });
    expect(result.chunks.length).toBeGreaterThan(2);
    for (const chunk of result.chunks) expect(chunk.startsWith('# A\n## B\n### C\n#### D\n')).toBe(true);
  });

  it('does not treat #hashtags or headings inside code as headings', () => {
    const text = `#notheading ${sentences(3)}\n\n\`\`\`sh\n# comment in code\necho hi\n\`\`\``;
    const result = splitText({ text, chunkLen: 500 });
    expect(result.chunks).toEqual([text]);
  });
});

describe('splitText: code fences and tables', () => {
  it.each([
    ['backtick fence', '```js\nconst a = 1;\n\nconst b = 2;\n```'],
    ['tilde fence', '~~~\nline 1\n\n\nline 2\n~~~'],
  ])('a %s is never cut at its inner blank lines', (_name, block) => {
    const text = `Intro paragraph here that explains things.\n\n${block}\n\nAfter the code there is more text.`;
    const { chunks } = splitText({ text, chunkLen: 40 });
    expect(chunks.some((chunk) => chunk.includes(block))).toBe(true);
  });

  it('a table that is the whole text is cut by rows, each chunk repeating the header', () => {
    const { chunks } = splitText({ text: tableOf(20), chunkLen: 100 });
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) {
      expect(chunk.startsWith('| name | value |\n| --- | --- |\n| row ')).toBe(true);
      expect(chunk.length).toBeLessThanOrEqual(120 + 20);
    }
    const rows = chunks.flatMap((chunk) => chunk.split('\n').slice(2));
    expect(rows).toEqual(Array.from({ length: 20 }, (_, i) => `| row ${i} | value ${i} |`));
  });

  it('a table that fits stays whole with its text', () => {
    const text = `Prices:\n${tableOf(3)}`;
    expect(splitText({ text, chunkLen: 500 }).chunks).toEqual([text]);
  });

  it('a large table inside text is cut by rows with its header', () => {
    const text = `Some intro text here.\n\n${tableOf(20)}\n\nClosing words.`;
    const { chunks } = splitText({ text, chunkLen: 100 });
    expect(chunks[0]).toBe('Some intro text here.');
    const tableChunks = chunks.filter((chunk) => chunk.startsWith('| name | value |'));
    expect(tableChunks.length).toBeGreaterThan(3);
    expect(chunks.join('\n')).toContain('| row 19 | value 19 |');
    expect(chunks[chunks.length - 1]).toBe('Closing words.');
  });

  it.each([
    ['table', '| a | b |\n|---|---|\n| 1 | 2 |', true],
    ['aligned separator', '| a | b |\n| :-- | --: |\n| 1 | 2 |', true],
    ['no separator', '| a | b |\n| 1 | 2 |', false],
    ['prose after rows', '| a | b |\n|---|---|\nnot a row', false],
    ['one line', '| a |', false],
    ['no pipes', 'a\nb', false],
  ])('isMarkdownTable: %s → %s', (_name, text, expected) => {
    expect(isMarkdownTable(text)).toBe(expected);
  });
});

describe('splitText: punctuation in several scripts, overlap', () => {
  it.each([
    ['English', sentences(30), 100, /goes here\.$/],
    ['Chinese', cjkSentences(30), 50, /。$/],
    ['Japanese', 'これは日本語の文です。'.repeat(20), 40, /。$/],
    ['exclamations', 'Wow that is great! '.repeat(20), 60, /!$/],
    ['full-width questions', '这是为什么？'.repeat(30), 40, /？$/],
  ])('%s text is cut at sentence ends', (_name, text, chunkLen, ending) => {
    const { chunks } = splitText({ text, chunkLen, overlapRatio: 0 });
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) {
      expect(chunk).toMatch(ending);
      expect(chunk.length).toBeLessThanOrEqual(chunkLen * 2);
    }
  });

  it('repeats the tail sentence of a chunk at the start of the next (overlap 0.2)', () => {
    const { chunks } = splitText({ text: sentences(30), chunkLen: 100, overlapRatio: 0.2 });
    expect(chunks.length).toBeGreaterThan(3);
    for (let i = 1; i < chunks.length; i++) {
      const firstSentence = chunks[i]!.match(/^Sentence \d+ goes here\./)![0];
      expect(chunks[i - 1]!.endsWith(firstSentence)).toBe(true);
    }
  });

  it('produces no overlap with ratio 0 and covers every sentence exactly once', () => {
    const { chunks } = splitText({ text: sentences(30), chunkLen: 100, overlapRatio: 0 });
    const found = chunks.join(' ').match(/Sentence \d+/g);
    expect(found).toEqual(Array.from({ length: 30 }, (_, i) => `Sentence ${i}`));
  });

  it('has no overlap between paragraphs (structural steps)', () => {
    const text = Array.from({ length: 6 }, (_, i) => `Paragraph ${i}: ${'word '.repeat(20).trim()}.`).join('\n\n');
    const { chunks } = splitText({ text, chunkLen: 120, overlapRatio: 0.3 });
    const found = chunks.join('\n').match(/Paragraph \d/g);
    expect(found).toEqual(Array.from({ length: 6 }, (_, i) => `Paragraph ${i}`));
  });

  it('falls back to commas when sentences are too long', () => {
    const text = `${Array.from({ length: 40 }, (_, i) => `clause ${i}`).join(', ')}.`;
    const { chunks } = splitText({ text, chunkLen: 80, overlapRatio: 0 });
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks.slice(0, -1)) expect(chunk).toMatch(/,$/);
  });
});

describe('splitText: custom separators and the split sign', () => {
  // Pieces of more than 30 characters: shorter ones join the next piece (below).
  const [one, two, three] = ['one', 'two', 'three'].map((name) => `${name}: a piece of more than thirty characters`);

  it.each([
    ['literal', `${one}###${two}###${three}`, ['###'], [one, two, three]],
    ['regex characters used literally', `${one}.*${two}.*${three}`, ['.*'], [one, two, three]],
    ['two separators', `${one}\n---\n${two}||${three}`, ['\n---\n', '||'], [one, two, three]],
    ['newline as separator', `${one}\n${two}\n${three}`, ['\n'], [one, two, three]],
  ])('%s: every piece becomes its own chunk', (_name, text, customReg, expected) => {
    expect(splitText({ text, chunkLen: 100, customReg }).chunks).toEqual(expected);
  });

  it.each([
    ['tiny pieces', 'x\ny\nz', ['\n'], ['x\ny\nz']],
    ['a title before its piece', `Q1###${one}###Q2###${two}`, ['###'], [`Q1###${one}`, `Q2###${two}`]],
    ['a short last piece stays', `${one}###end`, ['###'], [one, 'end']],
    ['two separators', `a\n---\n${one}||b||${two}`, ['\n---\n', '||'], [`a\n---\n${one}`, `b||${two}`]],
  ])('%s: a piece of 30 characters or fewer joins the next, the separator kept', (_name, text, customReg, expected) => {
    expect(splitText({ text, chunkLen: 100, customReg }).chunks).toEqual(expected);
  });

  it('a separator between every word gives at most one chunk per 31 characters, losing nothing', () => {
    // One chunk per piece made a 20 MB text of one-letter words 10 M chunks (seconds of blocked event loop).
    const text = Array.from({ length: 100_000 }, (_, i) => `w${i % 10}`).join(' ');
    const { chunks } = splitText({ text, chunkLen: 100, customReg: [' '] });
    expect(chunks.length).toBeLessThanOrEqual(text.length / 31 + 1);
    expect(chunks.join(' ')).toBe(text);
  });

  it('splits an oversize custom piece further', () => {
    const text = `${one}###${sentences(20)}`;
    const { chunks } = splitText({ text, chunkLen: 100, customReg: ['###'], overlapRatio: 0 });
    expect(chunks[0]).toBe(one);
    expect(chunks.length).toBeGreaterThan(3);
  });

  it('splits each part between split signs on its own (table part and text part)', () => {
    const text = `${tableOf(2)}\n${CUSTOM_SPLIT_SIGN}\nplain text part`;
    const { chunks } = splitText({ text, chunkLen: 500 });
    expect(chunks).toEqual(['| name | value |\n| --- | --- |\n| row 0 | value 0 |\n| row 1 | value 1 |', 'plain text part']);
  });
});

describe('splitText: text without separators (very long words)', () => {
  it('keeps a run shorter than 3 × chunkLen whole', () => {
    expect(splitText({ text: 'x'.repeat(250), chunkLen: 100 }).chunks).toEqual(['x'.repeat(250)]);
  });

  it('cuts a longer run into full windows with overlap and covers the whole text', () => {
    const text = Array.from({ length: 350 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
    const { chunks } = splitText({ text, chunkLen: 100, overlapRatio: 0.2 });
    for (const chunk of chunks) expect(chunk.length).toBe(100);
    expect(chunks[0]).toBe(text.slice(0, 100));
    expect(chunks[1]).toBe(text.slice(80, 180));
    expect(chunks[chunks.length - 1]).toBe(text.slice(250));
  });

  it('never cuts inside a surrogate pair', () => {
    const text = '😀'.repeat(400);
    const { chunks } = splitText({ text, chunkLen: 101, overlapRatio: 0 });
    for (const chunk of chunks) expect(chunk).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
  });

  it('chars is the sum of chunk lengths', () => {
    const result = splitText({ text: `${sentences(40)}\n\n${cjkSentences(40)}`, chunkLen: 120 });
    expect(result.chars).toBe(result.chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  });

  it('handles a large document quickly enough to stay linear-ish', () => {
    const text = Array.from({ length: 300 }, (_, i) => `## Part ${i}\n${sentences(15)}`).join('\n\n');
    const { chunks } = splitText({ text, chunkLen: 512 });
    expect(chunks.length).toBeGreaterThanOrEqual(300);
    expect(chunks.every((chunk) => chunk.startsWith('## Part '))).toBe(true);
  });
});

describe('splitText: nothing is lost (seeded random documents, no overlap)', () => {
  let seed = 7;
  const random = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!;
  const word = () => pick(['alpha', 'beta', 'gamma', 'delta', '知识', '库', 'x'.repeat(1 + Math.floor(random() * 300)), 'e.g', '2024']);
  const punctuation = () => pick([' ', ' ', ' ', '. ', ', ', '! ', '? ', '; ', '。', '，', '\n', '\n\n', '\n- ', '\n1. ']);
  const documentOf = (length: number) => {
    let text = '';
    while (text.length < length) {
      text += word() + punctuation();
      if (random() < 0.02) text += '\n```\ncode line\n\nmore code\n```\n';
    }
    return text;
  };
  const squash = (text: string) => text.replace(/\s+/g, '');

  it.each(Array.from({ length: 12 }, (_, i) => [i, [50, 120, 300, 700][i % 4]!, 400 + i * 500]))(
    'document %i (chunkLen %i, %i chars): chunks put back together give the text',
    (_i, chunkLen, length) => {
      const text = documentOf(length);
      const { chunks } = splitText({ text, chunkLen, overlapRatio: 0 });
      expect(chunks.every((chunk) => chunk.trim().length > 0)).toBe(true);
      expect(squash(chunks.join(''))).toBe(squash(text));
    },
  );

  it.each(Array.from({ length: 8 }, (_, i) => [i, [60, 200, 500, 1000][i % 4]!, 1000 + i * 700]))(
    'document %i (chunkLen %i, %i chars) with overlap: every chunk is a passage of the text, in order',
    (_i, chunkLen, length) => {
      // Whitespace-only pieces between separators are dropped, so compare without whitespace.
      const original = documentOf(length);
      const text = squash(original);
      const { chunks } = splitText({ text: original, chunkLen, overlapRatio: 0.25 });
      let from = 0;
      for (const chunk of chunks.map(squash)) {
        const at = text.indexOf(chunk, Math.max(0, from - chunkLen));
        expect(at, chunk).toBeGreaterThanOrEqual(0);
        from = at + chunk.length;
      }
      expect(text.endsWith(squash(chunks[chunks.length - 1]!))).toBe(true);
    },
  );
});

describe('splitText: inputs giving more chunks than a spread call can take', () => {
  it('a long text at a tiny chunk size', () => {
    const text = Array.from({ length: 200_000 }, (_, i) => `word${i % 97} and more.`).join(' ');
    const { chunks } = splitText({ text, chunkLen: 20, overlapRatio: 0 });
    expect(chunks.length).toBeGreaterThan(130_000);
    expect(chunks.slice(0, 3)).toEqual(splitText({ text: text.slice(0, 200), chunkLen: 20, overlapRatio: 0 }).chunks.slice(0, 3));
  });

  it('a table of 150,000 rows cut row by row', () => {
    // Rows longer than the header they repeat: a chunk of shorter rows takes more than one.
    const row = (i: number) => `| ${i} | a value longer than the header |`;
    const table = `| a | b |\n| --- | --- |\n${Array.from({ length: 150_000 }, (_, i) => row(i)).join('\n')}`;
    const { chunks } = splitText({ text: table, chunkLen: 10 });
    expect(chunks).toHaveLength(150_000);
    expect(chunks[149_999]).toBe(`| a | b |\n| --- | --- |\n${row(149_999)}`);
  });
});
