/**
 * File and HTML conversion kept off the event loop (report-loop-files.md): HTML pages but tiny ones
 * are converted in the worker (a file's bytes decoded there), uploads are sniffed and decoded
 * without building a string to check it, GB18030 previews decode a beginning only, and nothing
 * past TEXT_INLINE_MAX_CHARS is split or parsed as CSV on this thread. Asserted by what ran here (a
 * worker task running, the lengths this thread's splitter, CSV parser and decoders were given),
 * never by time; results are compared with the whole-file answers.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { splitText } from '../../src/domain/text-splitter.js';
import { convertsInline, htmlToMarkdown, htmlToMarkdownBounded, INLINE_MAX_CHARS, INLINE_MAX_TAGS } from '../../src/infra/html-to-markdown.js';
import { decodeText, extractText, normalizeExtractedText, sniffContentType } from '../../src/infra/text-extract.js';
import { MAX_RUNNING_WORKER_TASKS, MAX_WAITING_WORKER_TASKS_PER_OWNER, workerTaskLoad } from '../../src/infra/worker-task.js';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { csvToQa } from '../../src/platform/datasets/collections/collection-sources.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import { createLinkReadTurns } from '../../src/platform/datasets/files/link-read-turns.js';
import { qaOfText } from '../../src/platform/datasets/files/csv-read.js';
import type { StoredFile } from '../../src/platform/datasets/files/file.repo.js';
import { createFileService } from '../../src/platform/datasets/files/file.service.js';
import { TEXT_INLINE_MAX_CHARS } from '../../src/platform/datasets/files/large-text.js';
import { largestRecorded } from '../helpers/work-recorders.js';

/** Lengths of the texts this thread's splitter and CSV parser were given (workers load their own modules). */
const seen = vi.hoisted(() => ({ split: [] as number[], csv: [] as number[] }));

vi.mock('../../src/domain/text-splitter.js', async (importOriginal) => (await import('../helpers/work-recorders.js')).recordingSplitter(importOriginal, seen.split));
vi.mock('csv-parse/sync', async (importOriginal) => (await import('../helpers/work-recorders.js')).recordingCsvParse(importOriginal, seen.csv));

/** Byte lengths this thread's TextDecoders were asked to decode (the global replaced while a test runs). */
const decoded: number[] = [];
const OriginalTextDecoder = globalThis.TextDecoder;
function countDecoders(): void {
  decoded.length = 0;
  globalThis.TextDecoder = class extends OriginalTextDecoder {
    override decode(...args: Parameters<InstanceType<typeof OriginalTextDecoder>['decode']>): string {
      decoded.push(args[0]?.byteLength ?? 0);
      return super.decode(...args);
    }
  } as typeof TextDecoder;
}
afterEach(() => {
  globalThis.TextDecoder = OriginalTextDecoder;
});

const OWNER = 'loop-files-team';
const page = (body: string) => `<html><head><title>T</title></head><body>${body}</body></html>`;

describe('HTML is converted in the worker unless the page is tiny', () => {
  it('bounds what converts inline: at most INLINE_MAX_CHARS characters and INLINE_MAX_TAGS tag openings', () => {
    const tags = (count: number) => '<b>x'.repeat(count);
    expect(convertsInline(tags(INLINE_MAX_TAGS))).toBe(true);
    expect(convertsInline(tags(INLINE_MAX_TAGS + 1))).toBe(false);
    expect(convertsInline('x'.repeat(INLINE_MAX_CHARS))).toBe(true);
    expect(convertsInline('x'.repeat(INLINE_MAX_CHARS + 1))).toBe(false);
    expect(convertsInline(`<pre>${' '.repeat(5000)}</pre>`)).toBe(false);
  });

  it('a tiny page stays inline; a 20 KB page and a 1 KB page of 80 unclosed formatting tags go to the worker, with the same result', async () => {
    const tiny = page('<h1>Hi</h1><p>Some <b>bold</b> text.</p>');
    const inline = htmlToMarkdownBounded(tiny, {}, { owner: OWNER });
    expect(workerTaskLoad(OWNER).running).toBe(0);
    expect(await inline).toEqual(htmlToMarkdown(tiny));

    const flat = page('<p>A paragraph of ordinary text, with a <a href="/x">link</a>.</p>'.repeat(300));
    expect(flat.length).toBeGreaterThan(16 * 1024);
    const converting = htmlToMarkdownBounded(flat, { baseUrl: 'https://example.com/' }, { owner: OWNER });
    expect(workerTaskLoad(OWNER).running).toBe(1);
    expect(await converting).toEqual(htmlToMarkdown(flat, { baseUrl: 'https://example.com/' }));

    // parse5 reopens every unclosed formatting element in each new block: seconds for a few KB.
    const reopened = page(`<div>${Array.from({ length: 80 }, (_, i) => `<b id=${i}>`).join('')}${'</div><div>x'.repeat(40)}`);
    expect(reopened.length).toBeLessThan(INLINE_MAX_CHARS);
    const hostile = htmlToMarkdownBounded(reopened, {}, { owner: OWNER });
    expect(workerTaskLoad(OWNER).running).toBe(1);
    await hostile;
  });

  it('an .html file past INLINE_MAX_CHARS bytes is decoded in the worker, not here; its errors are the same', async () => {
    // 你好 in GB18030 (not UTF-8): decoded here, it would take a TextDecoder of this thread.
    const buffer = Buffer.concat([Buffer.from('<html><body>'), ...Array.from({ length: 800 }, () => Buffer.from(`3c703e${'c4e3bac3'.repeat(8)}3c2f703e0a`, 'hex')), Buffer.from('</body></html>')]);
    expect(buffer.length).toBeGreaterThan(INLINE_MAX_CHARS);
    countDecoders();
    const { text } = await extractText({ buffer, filename: 'legacy.html' }, { owner: OWNER });
    expect(decoded).toEqual([]);
    globalThis.TextDecoder = OriginalTextDecoder;
    expect(text).toBe(normalizeExtractedText(htmlToMarkdown(decodeText(buffer, 'legacy.html')).markdown));
    expect(text.startsWith('你好你好')).toBe(true);

    const binary = Buffer.concat([Buffer.from('<p>x</p>'.repeat(3000)), Buffer.from([0])]);
    await expect(extractText({ buffer: binary, filename: 'bin.html' }, { owner: OWNER })).rejects.toMatchObject({ httpStatus: 400, message: "File 'bin.html' is binary, not text" });
  });
});

describe('uploads are sniffed and decoded without building a string to check it', () => {
  it('UTF-8 takes no TextDecoder (a native check, one decode); the answers are unchanged', () => {
    const utf8 = Buffer.from('text line é\n'.repeat(10_000));
    countDecoders();
    expect(sniffContentType(utf8, 'a.txt')).toBe('text/plain');
    expect(decodeText(utf8, 'a.txt')).toBe(utf8.toString('utf8'));
    expect(decoded).toEqual([]);
    expect(sniffContentType(Buffer.from([0xc3, 0x28, 0x41]), 'a.txt')).toBe('application/octet-stream');
    expect(sniffContentType(Buffer.from('a\u0000b'), 'a.txt')).toBe('application/octet-stream');
    expect(() => decodeText(Buffer.from([0x81, 0x20, 0xff, 0xff]), 'bad.txt')).toThrow("File 'bad.txt' is not valid text");
  });
});

const auth = { authType: 'session', userId: 'u', teamId: OWNER, tmbId: 'member', role: 'owner', teamPermission: 0, isRoot: false } as unknown as AuthContext;
const FILE_ID = 'b'.repeat(24);

/** The file service over one stored file (no database: a preview reads the file and nothing else). */
function previewOf(filename: string, buffer: Buffer, input: { chunkSize?: number; isQAImport?: boolean }) {
  const file = { _id: FILE_ID, filename, contentType: 'text/plain', length: buffer.length, uploadDate: new Date(), metadata: { teamId: OWNER, tmbId: 'member' } } as unknown as StoredFile;
  const service = createFileService({ repos: { files: { find: async () => file, readBuffer: async () => buffer } }, config: {} } as unknown as DatasetsContext);
  return service.previewChunks(auth, { type: 'fileLocal', sourceId: FILE_ID, chunkSize: 512, overlapRatio: 0.2, ...input });
}
const firstFive = (text: string, chunkLen: number) => splitText({ text, chunkLen, overlapRatio: 0.2, customReg: [] }).chunks.slice(0, 5).map((q) => ({ q, a: '' }));

describe('previews decode, split and parse at most TEXT_INLINE_MAX_CHARS here', () => {
  it('a GB18030 text decodes its beginning only, with the chunks of the whole file', async () => {
    // 天气晴朗 and a newline, in GB18030, 2 MB.
    const buffer = Buffer.from('ccecc6f8c7e7c0ca0a'.repeat(230_000), 'hex');
    countDecoders();
    const got = await previewOf('gbk.txt', buffer, { chunkSize: 100 });
    expect(largestRecorded(decoded, 'some', 'bytes decoded here')).toBeLessThanOrEqual(TEXT_INLINE_MAX_CHARS);
    globalThis.TextDecoder = OriginalTextDecoder;
    expect(got).toEqual(firstFive(decodeText(buffer, 'gbk.txt'), 100));
  });

  it('chunks of 30,000 characters: the 2.5 M-character prefix is split in the worker, not here', async () => {
    const text = 'a, '.repeat(2_000_000);
    const expected = firstFive(text, 30_000);
    seen.split.length = 0;
    // The worker is handed the buffer's memory: the text is kept aside.
    const got = await previewOf('big.txt', Buffer.from(text), { chunkSize: 30_000 });
    expect(largestRecorded(seen.split, 'some', 'split here')).toBeLessThanOrEqual(TEXT_INLINE_MAX_CHARS);
    expect(got).toHaveLength(5);
    expect(got).toEqual(expected);
  });
});

describe('Q/A rows of a converted text are parsed in the CSV worker past TEXT_INLINE_MAX_CHARS', () => {
  const text = 'question one,answer one\n"a quoted, question",answer two\n'.repeat(6_000);

  it('qaOfText: inline up to the bound, in the worker past it, the same rows', async () => {
    const small = 'q,a\nq2,a2';
    const inline = qaOfText(small, { owner: OWNER });
    expect(workerTaskLoad(OWNER).running).toBe(0);
    expect(await inline).toEqual(csvToQa(small));
    expect(text.length).toBeGreaterThan(TEXT_INLINE_MAX_CHARS);
    seen.csv.length = 0;
    const parsing = qaOfText(text, { owner: OWNER });
    expect(workerTaskLoad(OWNER).running).toBe(1);
    const rows = await parsing;
    expect(seen.csv).toEqual([]);
    expect(rows).toEqual(csvToQa(text));
    await expect(qaOfText('only\n'.repeat(60_000), { owner: OWNER })).rejects.toMatchObject({ httpStatus: 400, message: expect.stringContaining('two columns') });
  });

  it('a Q/A preview of an .html file parses no more than TEXT_INLINE_MAX_CHARS here', async () => {
    const html = Buffer.from(page(`<p>${text.replace(/\n/g, '<br>')}</p>`));
    seen.csv.length = 0;
    const got = await previewOf('rows.html', html, { isQAImport: true });
    // The converted text is past the bound: its rows are parsed in the CSV worker, none here.
    expect(text.length).toBeGreaterThan(TEXT_INLINE_MAX_CHARS);
    expect(seen.csv).toEqual([]);
    expect(got).toHaveLength(5);
    expect(got[0]).toEqual({ q: 'question one', a: 'answer one' });
  });
});

describe('urlFetch reads its links a few at a time', () => {
  it('more pages than a team may queue worker tasks for are all converted (none refused with a 429 and left empty)', async () => {
    const server = createServer((request, response) => {
      response.setHeader('content-type', 'text/html');
      response.end(page(`<h1>Page ${request.url}</h1>${'<p>text</p>'.repeat(100)}`));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const count = Math.min(20, MAX_RUNNING_WORKER_TASKS + MAX_WAITING_WORKER_TASKS_PER_OWNER + 1);
      const urls = Array.from({ length: count }, (_, i) => `http://127.0.0.1:${port}/p${i}`);
      const config = { OUTBOUND_TIMEOUT_MS: 30_000, OUTBOUND_MAX_BYTES: 1024 * 1024, SSRF_ALLOW_PRIVATE: true };
      const service = createFileService({ repos: { files: {} }, config, linkReads: createLinkReadTurns() } as unknown as DatasetsContext);
      const pages = await service.urlFetch(auth, urls);
      expect(pages.map((one) => one.url)).toEqual(urls);
      expect(pages.map((one) => one.content.split('\n')[0])).toEqual(urls.map((_, i) => `# Page /p${i}`));
    } finally {
      server.close();
    }
  });
});
