import { beforeEach, describe, expect, it, vi } from 'vitest';
import { CUSTOM_SPLIT_SIGN, splitText } from '../../src/domain/text-splitter.js';
import { decodeText, extractText } from '../../src/infra/text-extract.js';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { csvToQa, withoutNul } from '../../src/platform/datasets/collections/collection-sources.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import type { StoredFile } from '../../src/platform/datasets/files/file.repo.js';
import { createFileService } from '../../src/platform/datasets/files/file.service.js';
import { previewChunks } from '../../src/platform/datasets/files/preview-chunks.js';
import { seededRandom } from '../helpers/seeded-random.js';
import { largestRecorded } from '../helpers/work-recorders.js';

/** Lengths of the texts the splitter and the CSV parser were given (the work a preview does). */
const seen = vi.hoisted(() => ({ split: [] as number[], csv: [] as number[] }));

vi.mock('../../src/domain/text-splitter.js', async (importOriginal) => (await import('../helpers/work-recorders.js')).recordingSplitter(importOriginal, seen.split));
vi.mock('csv-parse/sync', async (importOriginal) => (await import('../helpers/work-recorders.js')).recordingCsvParse(importOriginal, seen.csv));

const auth = { authType: 'session', userId: 'u', teamId: 'team', tmbId: 'member', role: 'owner', teamPermission: 0, isRoot: false } as unknown as AuthContext;
const FILE_ID = 'a'.repeat(24);

/** The file service over one stored file (no database: the preview reads the file and nothing else). */
function serviceOver(filename: string, buffer: Buffer, contentType = 'text/plain') {
  const file: StoredFile = { _id: FILE_ID, filename, contentType, length: buffer.length, uploadDate: new Date(), metadata: { teamId: 'team', tmbId: 'member' } } as unknown as StoredFile;
  const files = { find: async () => file, readBuffer: async () => buffer };
  const service = createFileService({ repos: { files }, config: {} } as unknown as DatasetsContext);
  return {
    preview: (input: { chunkSize?: number; overlapRatio?: number; customSplitChar?: string; isQAImport?: boolean } = {}) =>
      service.previewChunks(auth, { type: 'fileLocal', sourceId: FILE_ID, chunkSize: 512, overlapRatio: 0.2, ...input }),
    /** What the preview answered before it read only the beginning: the whole file extracted, split whole. */
    whole: async (input: { chunkSize?: number; overlapRatio?: number; customSplitChar?: string; isQAImport?: boolean } = {}) => {
      const raw = input.isQAImport && filename.endsWith('.csv');
      const text = withoutNul(raw ? decodeText(buffer, filename) : (await extractText({ buffer, filename, mimetype: contentType }, { owner: 'team' })).text);
      if (input.isQAImport) return csvToQa(text).slice(0, 5);
      const { chunks } = splitText({ text, chunkLen: input.chunkSize ?? 512, overlapRatio: input.overlapRatio ?? 0.2, customReg: input.customSplitChar ? [input.customSplitChar] : [] });
      return chunks.slice(0, 5).map((q) => ({ q, a: '' }));
    },
  };
}

/** Markdown of every kind the splitter treats apart: headings, lists, code (some fences left open), tables, long runs, CRLF, split signs, custom separators. */
function randomDocument(next: () => number, length: number): string {
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)]!;
  const int = (low: number, high: number) => low + Math.floor(next() * (high - low + 1));
  const words = ['alpha', 'beta', 'install', 'the', 'configuration', '数据', '知识库', 'é', '😀', '|', '#', '`'];
  const sentence = () => Array.from({ length: int(1, 25) }, () => pick(words)).join(pick([' ', ' ', ''])) + pick(['. ', '。', '! ', '? ', '; ', ', ', '，', '', '.\n']);
  const paragraph = () => Array.from({ length: int(1, 15) }, sentence).join('');
  const blocks = [
    () => `${'#'.repeat(int(1, 5))} ${sentence()}\n`,
    () => `${paragraph()}\n\n`,
    () => `${paragraph()}\n`,
    () => `${Array.from({ length: int(1, 12) }, () => `${pick(['- ', '* ', '1. ', '> '])}${sentence()}`).join('\n')}\n`,
    () => {
      const fence = pick(['```', '~~~']);
      const lines = Array.from({ length: int(1, 50) }, () => `  let ${pick(words)} = ${int(0, 99)};`).join('\n');
      return `${fence}js\n${lines}\n${next() < 0.7 ? fence : ''}\n`;
    },
    () => {
      const columns = int(1, 4);
      const row = () => `| ${Array.from({ length: columns }, () => sentence().replace(/\|/g, '')).join(' | ')} |`;
      return `${row()}\n|${' --- |'.repeat(columns)}\n${Array.from({ length: int(0, 150) }, row).join('\n')}\n`;
    },
    () => `${pick(['a', '数', '😀'])}`.repeat(int(50, 4000)) + '\n',
    () => `\n${CUSTOM_SPLIT_SIGN}\n`,
    () => '\n\n\n\n',
    () => `${paragraph().replace(/\n/g, '\r\n')}\r\n`,
    () => `${sentence()}@@${sentence()}@@`,
  ];
  let text = '';
  while (text.length < length) text += pick(blocks)();
  return text;
}

beforeEach(() => {
  seen.split.length = 0;
  seen.csv.length = 0;
});

describe('previewChunks: the first chunks of a text from a prefix of it', () => {
  it('gives the first five chunks of the whole text, for texts of every kind and every setting', () => {
    const next = seededRandom(20261201);
    for (let i = 0; i < 60; i++) {
      const chunkLen = [100, 128, 200, 512, 1000, 3000][i % 6]!;
      const options = { chunkLen, overlapRatio: [0, 0.2, 0.5, 0.9][i % 4]!, customReg: i % 5 === 0 ? ['@@'] : i % 7 === 0 ? ['\n\n', '。'] : [] };
      const text = randomDocument(next, chunkLen * (50 + Math.floor(next() * 400)));
      const expected = splitText({ text, ...options }).chunks.slice(0, 5);
      expect(previewChunks(text, options), `document ${i}`).toEqual(expected);
    }
  });

  it('does not cut inside a code block, however far away its closing fence is', () => {
    // An unclosed fence runs to the next fence: everything between is one block, never cut at its lines.
    const lines = Array.from({ length: 3000 }, (_, i) => `line ${i} of the listing`).join('\n');
    const text = `Intro.\n\n\`\`\`sh\n${lines}\n\nMore text.\n\n\`\`\`\n${'Tail sentence. '.repeat(2000)}`;
    const options = { chunkLen: 100, overlapRatio: 0.2, customReg: [] };
    expect(previewChunks(text, options)).toEqual(splitText({ text, ...options }).chunks.slice(0, 5));
  });

  it('splits only a prefix of a long text', () => {
    const text = 'Sentence one is here. Another follows it, with a comma! '.repeat(40_000);
    const options = { chunkLen: 100, overlapRatio: 0.2, customReg: [] };
    seen.split.length = 0;
    const preview = previewChunks(text, options);
    // Taken before the whole text is split for the comparison below.
    const largestSplit = largestRecorded(seen.split, 'some', 'the preview split');
    expect(preview).toEqual(splitText({ text, ...options }).chunks.slice(0, 5));
    expect(largestSplit).toBeLessThan(text.length / 50);
  });
});

describe('getPreviewChunks of a stored file: from its beginning, as the whole file gave', () => {
  const markdown = randomDocument(seededRandom(7), 1_500_000);

  it.each([
    ['.md', 'guide.md', Buffer.from(markdown)],
    ['.txt with a UTF-8 byte order mark', 'notes.txt', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(markdown)])],
    ['.txt in UTF-16LE', 'notes.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(markdown, 'utf16le')])],
  ])('%s', async (_name, filename, buffer) => {
    const { preview, whole } = serviceOver(filename, buffer);
    for (const input of [{}, { chunkSize: 100 }, { chunkSize: 2000, overlapRatio: 0, customSplitChar: '@@' }]) {
      seen.split.length = 0;
      const got = await preview(input);
      expect(largestRecorded(seen.split, 'some', 'the preview split')).toBeLessThan(buffer.length / 10);
      expect(got).toEqual(await whole(input));
    }
  });

  const rows = Array.from({ length: 16_000 }, (_, i) => `question ${i},"answer ${i}, with a comma\nand a line break",extra ${i}`).join('\r\n');

  it('a CSV file: its Markdown table and its Q/A rows, parsing only the first rows', async () => {
    const buffer = Buffer.from(`index,content\r\n${rows}\r\n`);
    const { preview, whole } = serviceOver('table.csv', buffer);
    for (const input of [{}, { chunkSize: 100 }, { isQAImport: true }]) {
      seen.csv.length = 0;
      seen.split.length = 0;
      const got = await preview(input);
      expect(largestRecorded(seen.csv, 'some', `CSV parsed for ${JSON.stringify(input)}`)).toBeLessThan(buffer.length / 10);
      // A Q/A import is not split; the others split the table's beginning.
      if (input.isQAImport) expect(seen.split).toEqual([]);
      else expect(largestRecorded(seen.split, 'some', `split for ${JSON.stringify(input)}`)).toBeLessThan(buffer.length / 10);
      expect(got).toEqual(await whole(input));
    }
  });

  it('a GB18030 CSV (Excel on Chinese Windows)', async () => {
    // 问题,答案 / 天气,晴朗, then more rows, in GB18030.
    const buffer = Buffer.from('cecacce22cb4f0b0b80a' + 'ccecc6f82cc7e7c0ca0a'.repeat(200_000), 'hex');
    const { preview, whole } = serviceOver('gbk.csv', buffer);
    for (const input of [{ isQAImport: true }, { chunkSize: 100 }]) {
      seen.csv.length = 0;
      const got = await preview(input);
      expect(largestRecorded(seen.csv, 'some', `CSV parsed for ${JSON.stringify(input)}`)).toBeLessThan(buffer.length / 10);
      expect(got).toEqual(await whole(input));
    }
  });

  it('refuses what the whole file refuses', async () => {
    const binary = Buffer.concat([Buffer.from('a,b\n'.repeat(40_000)), Buffer.from([0, 1, 2])]);
    await expect(serviceOver('data.csv', binary).preview({ isQAImport: true })).rejects.toMatchObject({ httpStatus: 400, message: "File 'data.csv' is binary, not text" });
    const oneColumn = Buffer.from('only\n'.repeat(40_000));
    await expect(serviceOver('one.csv', oneColumn).preview({ isQAImport: true })).rejects.toThrow('two columns');
  });

  it('a small file is read whole, as before', async () => {
    const buffer = Buffer.from('# Title\n\nSome markdown body text.');
    const { preview, whole } = serviceOver('small.md', buffer);
    expect(await preview()).toEqual(await whole());
  });
});
