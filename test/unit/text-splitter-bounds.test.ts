import { describe, expect, it } from 'vitest';
import { CUSTOM_SPLIT_SIGN, splitText } from '../../src/domain/text-splitter.js';

/** A Markdown table with a header of `headerChars` letters and `rows` one-character rows. */
const table = (headerChars: number, rows: number) => `|${'h'.repeat(headerChars)}|\n|---|\n${'|1|\n'.repeat(rows)}`;
/** Lines starting with a backtick: the code step emits each (over 30 characters) as a chunk. */
const codeLines = (count: number) => `\`${'c'.repeat(31)}\`\n`.repeat(count);
const heading = (level: number, chars: number) => `${'#'.repeat(level)} ${'t'.repeat(chars)}\n`;

describe('splitText: what it repeats (headings, table headers) never outweighs the text', () => {
  // Repeated on every chunk, a 400 KB table header over 110,000 rows (a <1 MB create/text) made 44 GB of chunks.
  it.each([
    ['a table whose header is longer than the chunk size', 512, table(4_000, 1_100)],
    ['the same table inside text', 512, `Intro text.\n\n${table(4_000, 1_100)}\nClosing words.`],
    ['the same table between split signs (a CSV sheet)', 512, `Sheet one.\n${CUSTOM_SPLIT_SIGN}\n${table(4_000, 1_100)}`],
    ['a 180-character header over one-character rows', 100, table(180, 5_000)],
    ['a 20,000-character heading over short code lines', 30_000, `${heading(1, 20_000)}${codeLines(2_000)}`],
    ['four 195-character headings over short code lines', 100, `${[1, 2, 3, 4].map((level) => heading(level, 195)).join('')}${codeLines(3_000)}`],
    ['sections of long headings and long-header tables', 100, `${heading(1, 195)}${`${heading(2, 195)}${table(150, 60)}\n`.repeat(200)}`],
  ])('%s (chunkLen %i)', (_name, chunkLen, text) => {
    const { chunks, chars } = splitText({ text, chunkLen });
    expect(chunks.length).toBeGreaterThan(1);
    expect(chars).toBeLessThanOrEqual(3 * text.length);
  });

  it('a table header too long to repeat is kept once and the table cut like text', () => {
    const { chunks } = splitText({ text: table(4_000, 1_100), chunkLen: 512 });
    const joined = chunks.join('\n');
    expect(joined.split('|---|').length - 1).toBe(1);
    expect(joined.split('|1|').length - 1).toBe(1_100);
  });

  it('a long header is repeated while each chunk holds rows at least as long as it', () => {
    const header = `|${'h'.repeat(180)}|\n| --- |\n`;
    const { chunks } = splitText({ text: table(180, 5_000), chunkLen: 100 });
    expect(chunks.every((chunk) => chunk.startsWith(header))).toBe(true);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.length - header.length).toBeGreaterThanOrEqual(header.length - 1);
    expect(chunks.join('\n').split('|1|').length - 1).toBe(5_000);
  });

  it('a heading whose copies would outweigh its section leads only the first chunk of it', () => {
    const { chunks } = splitText({ text: `${heading(1, 20_000)}${codeLines(2_000)}`, chunkLen: 30_000 });
    expect(chunks.length).toBeGreaterThan(100);
    expect(chunks.filter((chunk) => chunk.startsWith('# ttt')).length).toBe(1);
  });
});
