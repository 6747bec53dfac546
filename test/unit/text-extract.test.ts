import { describe, expect, it } from 'vitest';
import { readDocxHtml } from '../../src/infra/docx-html.js';
import { isAppError } from '../../src/infra/errors.js';
import { joinPdfPages, type PdfPage, readPdfText } from '../../src/infra/pdf-text.js';
import { DOCX_MIME, extractText, sniffContentType } from '../../src/infra/text-extract.js';
import { makeDocx, makeEmptyParagraphsDocx, makePdf, makeZip } from '../fixtures/files/make-fixtures.js';

/** The team the files are read for (whose turn worker tasks wait for). */
const task = { owner: 'team' };

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16]);
const GIF = Buffer.from('GIF89a\x01\x00', 'latin1');
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0, 0, 0, 0]), Buffer.from('WEBPVP8 ')]);

const rejection = async (promise: Promise<unknown>) => {
  const error = await promise.then(() => undefined, (caught: unknown) => caught);
  expect(isAppError(error)).toBe(true);
  return error as { httpStatus: number; statusText: string; message: string };
};

describe('sniffContentType', () => {
  it.each([
    ['pdf', makePdf([{ lines: ['x'] }]), 'x.bin', 'application/pdf'],
    ['docx by name', makeDocx(['x']), 'a.docx', DOCX_MIME],
    ['docx by content', makeDocx(['x']), 'upload', DOCX_MIME],
    ['other zip', makeZip({ 'a.txt': 'a' }), 'a.zip', 'application/zip'],
    ['png', PNG, 'a.png', 'image/png'],
    ['jpeg', JPEG, 'a.jpg', 'image/jpeg'],
    ['gif', GIF, 'a.gif', 'image/gif'],
    ['webp', WEBP, 'a.webp', 'image/webp'],
    ['utf-8 text', Buffer.from('héllo 世界'), 'a.txt', 'text/plain'],
    ['utf-16 text with BOM', Buffer.from([0xff, 0xfe, 0x68, 0x00]), 'a.txt', 'text/plain'],
    ['empty', Buffer.alloc(0), 'a.txt', 'text/plain'],
    ['NUL bytes', Buffer.from([0x61, 0x00, 0x62]), 'a.txt', 'application/octet-stream'],
    ['invalid utf-8', Buffer.from([0xc3, 0x28, 0xa0, 0xa1]), 'a.txt', 'application/octet-stream'],
  ])('%s → %s', (_name, buffer, filename, expected) => {
    expect(sniffContentType(buffer, filename)).toBe(expected);
  });
});

describe('extractText', () => {
  it.each([
    ['txt', 'notes.txt', 'Line one\r\nLine two\n\n\n\nLine three', 'Line one\nLine two\n\nLine three'],
    ['md with BOM', 'README.MD', '\uFEFF# Title\n\nBody', '# Title\n\nBody'],
    ['html', 'page.html', '<html><head><title>T</title><script>x()</script></head><body><h2>Sub</h2><p>Hello <b>there</b></p></body></html>', '## Sub\n\nHello **there**'],
    ['csv as a Markdown table', 'qa.csv', 'q,a\n"What, exactly?","It\'s ""this"""\n', '| q | a |\n| --- | --- |\n| What, exactly? | It\'s "this" |'],
  ])('%s', async (format, filename, content, expected) => {
    const result = await extractText({ buffer: Buffer.from(content, 'utf8'), filename }, task);
    expect(result.text).toBe(expected);
    expect(result.format).toBe(format.split(' ')[0]);
  });

  it('decodes UTF-16 and GB18030 text', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('知识库 text', 'utf16le')]);
    expect((await extractText({ buffer: utf16, filename: 'a.txt' }, task)).text).toBe('知识库 text');
    const gbk = Buffer.from([0xd6, 0xaa, 0xca, 0xb6, 0xbf, 0xe2]); // 知识库 in GBK
    expect((await extractText({ buffer: gbk, filename: 'a.txt' }, task)).text).toBe('知识库');
  });

  it('reads a PDF: pages in order, header and footer lines dropped, sentences on their own lines', async () => {
    const pdf = makePdf([
      { header: 'ACME Confidential', lines: ['First line of text', 'continues here.', 'Second (para) line.'], footer: 'Page 1' },
      { header: 'ACME Confidential', lines: ['Page two text.'], footer: 'Page 2' },
    ]);
    const result = await extractText({ buffer: pdf, filename: 'report.pdf' }, task);
    expect(result).toEqual({ format: 'pdf', text: 'First line of text continues here.\nSecond (para) line.\nPage two text.' });
  });

  it.each([
    ['stored', {}],
    ['deflated, as Word writes it', { deflate: true }],
    ['with ZIP64 records', { deflate: true, zip64: true }],
  ])('reads a DOCX as Markdown (headings kept): %s', async (_name, options) => {
    const docx = makeDocx([{ heading: 1, text: 'Handbook' }, 'Welcome & hello.', { heading: 2, text: 'Rules' }, 'Be kind.'], options);
    const result = await extractText({ buffer: docx, filename: 'handbook.docx' }, task);
    expect(result).toEqual({ format: 'docx', text: '# Handbook\n\nWelcome & hello.\n\n## Rules\n\nBe kind.' });
  });

  it('uses the MIME type when the name has no extension', async () => {
    const result = await extractText({ buffer: Buffer.from('plain'), filename: 'upload', mimetype: 'text/plain; charset=utf-8' }, task);
    expect(result).toEqual({ text: 'plain', format: 'txt' });
  });

  it.each([
    ['unsupported extension', { buffer: Buffer.from('x'), filename: 'sheet.xlsx' }, /Only \.txt, \.md, \.html, \.csv, \.pdf and \.docx files are supported \(got 'sheet\.xlsx'\)/],
    ['unknown type without extension', { buffer: Buffer.from('x'), filename: 'blob', mimetype: 'application/octet-stream' }, /supported/],
    ['empty file', { buffer: Buffer.alloc(0), filename: 'empty.txt' }, /'empty\.txt' is empty/],
    ['whitespace only', { buffer: Buffer.from(' \n\t '), filename: 'blank.md' }, /contains no text/],
    ['binary presented as text', { buffer: PNG, filename: 'image.txt' }, /is binary, not text/],
    ['control characters', { buffer: Buffer.from('\u0001\u0002\u0003abc\u0004\u0005'), filename: 'weird.txt' }, /binary/],
    ['fake pdf', { buffer: Buffer.from('hello'), filename: 'fake.pdf' }, /'fake\.pdf' is not a PDF/],
    ['corrupt pdf', { buffer: Buffer.from('%PDF-1.4\n garbage'), filename: 'bad.pdf' }, /Cannot read the PDF file 'bad\.pdf'/],
    ['fake docx', { buffer: Buffer.from('hello'), filename: 'fake.docx' }, /not a \.docx document/],
    ['zip that is not a docx', { buffer: makeZip({ 'a.txt': 'a' }), filename: 'x.docx' }, /Cannot read the \.docx file 'x\.docx'/],
    ['html without text', { buffer: Buffer.from('<script>x()</script>'), filename: 'a.html' }, /contains no text/],
    ['malformed csv', { buffer: Buffer.from('a,"b\nc,d'), filename: 'a.csv' }, /CSV text is malformed/],
  ])('%s → 400 missingParams', async (_name, file, message) => {
    const error = await rejection(extractText(file, task));
    expect(error.httpStatus).toBe(400);
    expect(error.statusText).toBe('missingParams');
    expect(error.message).toMatch(message);
  });
});

describe('DOCX limits', () => {
  /** The largest gap between timer ticks while `work` runs: how long the event loop was blocked. */
  async function longestStall(work: () => Promise<unknown>): Promise<number> {
    let last = performance.now();
    let longest = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 10);
    try {
      await work();
    } finally {
      clearInterval(timer);
    }
    return longest;
  }

  it.each([
    ['a part declared over 50 MB', makeEmptyParagraphsDocx(10_000_000, { deflate: true }), /entry "word\/document\.xml" unpacks to 58 MB, over the limit of 50 MB per entry/],
    [
      'a part larger than it declares',
      makeEmptyParagraphsDocx(10_000_000, { deflate: true, declaredSizes: { 'word/document.xml': 1000 } }),
      /entry "word\/document\.xml" unpacks to more than the 1000 bytes it declares/,
    ],
    ['more than 5000 entries', makeZip(Object.fromEntries(Array.from({ length: 5001 }, (_, i) => [`word/media/${i}.txt`, 'x']))), /5001 entries, over the limit of 5000/],
  ])('a zip bomb with %s is refused before it is unpacked (400)', async (_name, docx, message) => {
    expect(docx.length).toBeLessThan(1024 * 1024);
    const error = await rejection(extractText({ buffer: docx, filename: 'bomb.docx' }, task));
    expect(error.httpStatus).toBe(400);
    expect(error.statusText).toBe('missingParams');
    expect(error.message).toMatch(/^Cannot read the \.docx file 'bomb\.docx' \(/);
    expect(error.message).toMatch(message);
  });

  it('a small docx that expands within the caps but past the heap limit is refused without blocking the event loop', async () => {
    // The security review's kind of file (10 KB of empty paragraphs expanding to gigabytes to
    // convert), against a smaller heap: the same refusal in a few seconds rather than twenty
    // (security-docx-bomb.test.ts sends the review's own file through the API, default heap).
    const docx = makeEmptyParagraphsDocx(300_000, { deflate: true });
    expect(docx.length).toBeLessThan(16 * 1024);
    let error: unknown;
    const stall = await longestStall(async () => {
      error = await readDocxHtml(docx, task, 30_000, 64).catch((thrown: unknown) => thrown);
    });
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/memory limit/);
    expect(stall).toBeLessThan(1000);
  });

  it('a conversion that exceeds its time limit is stopped with a clear error', async () => {
    await expect(readDocxHtml(makeDocx(['x']), task, 1)).rejects.toThrow(/took longer than 1 ms/);
  });
});

describe('PDF internals', () => {
  it.each([
    ['sentence ends make lines, other line ends a space', [{ height: 800, items: [['Hello', true, 400], ['world.', true, 380], ['Next', false, 360], [' part', true, 360]] }], 'Hello world.\nNext part'],
    ['CJK line ends join without a space', [{ height: 800, items: [['你好', true, 400], ['世界。', true, 380]] }], '你好世界。'],
    ['header and footer bands dropped', [{ height: 1000, items: [['Header', true, 990], ['Body.', true, 500], ['7', true, 10]] }], 'Body.'],
    ['items without position kept, empty pages skipped', [{ height: 800, items: [['x', false, null]] }, { height: 800, items: [] }, { height: 800, items: [['y', false, 400]] }], 'x\ny'],
  ] as [string, PdfPage[], string][])('joinPdfPages: %s', (_name, pages, expected) => {
    expect(joinPdfPages(pages)).toBe(expected);
  });

  it('a parse that exceeds its time limit is stopped with a clear error', async () => {
    const pdf = makePdf([{ lines: ['x'] }]);
    await expect(readPdfText(pdf, task, { timeoutMs: 1 })).rejects.toThrow(/took longer than 1 ms/);
  });
});
