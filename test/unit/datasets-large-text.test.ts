import { beforeEach, describe, expect, it, vi } from 'vitest';
import { splitText } from '../../src/domain/text-splitter.js';
import { PAGE_MAX_ITEMS } from '../../src/infra/worker-pages.js';
import { textOfStoredFile } from '../../src/platform/datasets/collections/collection-sources.js';
import { hashText, type SplitSettings } from '../../src/platform/datasets/collections/source-text.js';
import type { StoredFile } from '../../src/platform/datasets/files/file.repo.js';
import { headOfStoredFile, previewChunksOfText, splitSourceText, splitStoredFile, TEXT_FILE_INLINE_MAX_BYTES, TEXT_INLINE_MAX_CHARS } from '../../src/platform/datasets/files/large-text.js';
import { previewChunks } from '../../src/platform/datasets/files/preview-chunks.js';
import { markdownOf } from '../fixtures/datasets/large-text.js';

/** Paged worker tasks started and the owners they named (the real pool runs them). */
const tasks = vi.hoisted(() => ({ started: 0, owners: [] as (string | undefined)[] }));
vi.mock('../../src/infra/worker-task.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/infra/worker-task.js')>();
  return {
    ...original,
    runPagedWorkerTask: (...args: Parameters<typeof original.runPagedWorkerTask>) => {
      tasks.started += 1;
      tasks.owners.push(args[3]?.owner);
      return original.runPagedWorkerTask(...args);
    },
  };
});

beforeEach(() => {
  tasks.started = 0;
  tasks.owners = [];
});

const fileOf = (filename: string, contentType = 'text/plain') =>
  ({ _id: 'b'.repeat(24), filename, contentType, length: 0, uploadDate: new Date(), metadata: { teamId: 'team', tmbId: 'member' } }) as unknown as StoredFile;
/** A Buffer owning the whole of its memory (as a file read from storage), which the worker is handed. */
const own = (bytes: Buffer) => Buffer.from(new Uint8Array(bytes));

/** What an import made of a text inline before: splitText's chunks, sha256 and length of the text. */
function inline(text: string, split: SplitSettings) {
  return { items: splitText({ text, ...split }).chunks.map((q, chunkIndex) => ({ q, chunkIndex })), hashRawText: hashText(text), rawTextLength: text.length };
}

const markdown = markdownOf(600 * 1024);
const gb18030 = new Uint8Array([0xc4, 0xe3, 0xba, 0xc3]); // 你好 in GB18030, not UTF-8
const csv = Array.from({ length: 12_000 }, (_, i) => `q ${i},"answer ${i}, quoted"`).join('\r\n');

describe('large texts are split in a worker, into the chunks, hash and length of splitting them inline', () => {
  it.each([
    { name: 'Markdown at chunk size 100 (several pages of chunks)', filename: 'a.md', bytes: Buffer.from(markdown), split: { chunkLen: 100, overlapRatio: 0.2, customReg: [] }, pages: 2 },
    { name: 'UTF-16 with a byte order mark', filename: 'b.txt', bytes: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(markdown, 'utf16le')]), split: { chunkLen: 512, overlapRatio: 0.2, customReg: [] } },
    { name: 'GB18030, a custom separator, no overlap', filename: 'c.txt', bytes: Buffer.concat(Array.from({ length: 80_000 }, () => Buffer.concat([gb18030, Buffer.from('. ')]))), split: { chunkLen: 300, overlapRatio: 0, customReg: ['. '] } },
    { name: 'CSV as a Markdown table', filename: 'd.csv', bytes: Buffer.from(csv), split: { chunkLen: 1000, overlapRatio: 0.2, customReg: [] } },
  ])('$name', async ({ filename, bytes, split, pages = 1 }) => {
    expect(bytes.length).toBeGreaterThan(TEXT_FILE_INLINE_MAX_BYTES);
    const file = fileOf(filename);
    const expected = inline(await textOfStoredFile(file, bytes), split);
    expect(expected.items.length).toBeGreaterThan((pages - 1) * PAGE_MAX_ITEMS);
    expect(await splitStoredFile(file, own(bytes), split)).toEqual(expected);
    expect(tasks.owners).toEqual(['team']);
  });

  it('a text with lone surrogates and NUL characters, as given', async () => {
    const text = `${markdown}\ud800 lone \udc00 halves \u0000 and 🚀`;
    const split = { chunkLen: 200, overlapRatio: 0.2, customReg: ['\n\n'] };
    expect(await splitSourceText(text, split, { owner: 'team' })).toEqual(inline(text, split));
    expect(tasks.started).toBe(1);
  });

  it('what stays inline: a short text, and a short text file', async () => {
    const split = { chunkLen: 100, overlapRatio: 0.2, customReg: [] };
    const short = markdown.slice(0, TEXT_INLINE_MAX_CHARS);
    expect(await splitSourceText(short, split, { owner: 'team' })).toEqual(inline(short, split));
    expect(await splitStoredFile(fileOf('short.md'), Buffer.from(short.slice(0, 100_000)), split)).toEqual(inline(short.slice(0, 100_000).trim(), split));
    expect(tasks.started).toBe(0);
  });

  it('refuses what reading it inline refuses, with the same message', async () => {
    const split = { chunkLen: 512, overlapRatio: 0.2, customReg: [] };
    // The three run side by side: each is mostly a worker's start.
    const files = [
      ['binary.txt', Buffer.concat([Buffer.from(markdown), Buffer.from([0, 1, 2])])],
      ['blank.md', Buffer.from(' \n'.repeat(TEXT_INLINE_MAX_CHARS))],
      ['bad.csv', Buffer.from(`${csv}\r\nlast,"never closed`)],
    ] as const;
    await Promise.all(
      files.map(async ([filename, bytes]) => {
        const message = await textOfStoredFile(fileOf(filename), bytes).then(
          () => 'read',
          (error: Error) => error.message,
        );
        expect(message).not.toBe('read');
        await expect(splitStoredFile(fileOf(filename), own(bytes), split)).rejects.toMatchObject({ httpStatus: 400, message });
      }),
    );
    expect(tasks.started).toBe(3);
  });

  it('a buffer that shares its memory is copied, not handed over', async () => {
    const pool = Buffer.from(`xx${markdown}`);
    const bytes = pool.subarray(2);
    await splitStoredFile(fileOf('shared.md'), bytes, { chunkLen: 512, overlapRatio: 0.2, customReg: [] });
    expect(bytes.toString()).toBe(markdown);
  });
});

describe('previews of large texts in a worker', () => {
  it('the head and length of a file, and a raw CSV', async () => {
    const bytes = Buffer.from(markdown);
    expect(await headOfStoredFile(fileOf('a.md'), own(bytes), false, 3000)).toEqual({ head: markdown.slice(0, 3000), length: markdown.length });
    const raw = await textOfStoredFile(fileOf('d.csv'), Buffer.from(csv), true);
    expect(await headOfStoredFile(fileOf('d.csv'), own(Buffer.from(csv)), true, 3000)).toEqual({ head: raw.slice(0, 3000), length: raw.length });
    expect(tasks.started).toBe(2);
  });

  it('the first chunks of a text', async () => {
    const options = { chunkLen: 512, overlapRatio: 0.2, customReg: [] };
    expect(await previewChunksOfText(markdown, options, { owner: 'team' })).toEqual(previewChunks(markdown, options));
    expect(tasks.started).toBe(1);
  });
});
