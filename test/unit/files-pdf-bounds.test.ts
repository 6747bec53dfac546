import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { joinPdfPages, type PdfPage, readPdfText } from '../../src/infra/pdf-text.js';
import { extractText } from '../../src/infra/text-extract.js';

/** A one-page PDF whose content stream (`/FlateDecode`) is `content`, deflated here unless it is already. */
function pdfWithContent(content: Buffer, height = 792, deflate = true): Buffer {
  const stream = deflate ? zlib.deflateSync(content, { level: 9 }) : content;
  const objects = [
    Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
    Buffer.from('<< /Type /Pages /Kids [4 0 R] /Count 1 >>'),
    Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'),
    Buffer.from(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 ${height}] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>`),
    Buffer.concat([Buffer.from(`<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`), stream, Buffer.from('\nendstream')]),
  ];
  const parts = [Buffer.from('%PDF-1.4\n')];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(length);
    const part = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from('\nendobj\n')]);
    parts.push(part);
    length += part.length;
  });
  let xref = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) xref += `${String(offset).padStart(10, '0')} 00000 n \n`;
  xref += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`;
  parts.push(Buffer.from(xref));
  return Buffer.concat(parts);
}

/**
 * Two words around `megabytes` MB of spaces in the content stream: about 1 KB a MB once deflated
 * (streamed, never held whole). Run-length matching finds the same longest matches as the default
 * strategy here, so the same size, in a seventh of the time (1 GB: 0.4 s, not 3 s).
 */
async function inflatingPdf(megabytes: number): Promise<Buffer> {
  const deflate = zlib.createDeflate({ level: 9, strategy: zlib.constants.Z_RLE });
  const out: Buffer[] = [];
  deflate.on('data', (chunk: Buffer) => out.push(chunk));
  const done = new Promise((resolve) => deflate.on('end', resolve));
  deflate.write(Buffer.from('BT /F1 12 Tf 72 700 Td (hello) Tj ET\n'));
  const spaces = Buffer.alloc(1024 * 1024, 0x20);
  for (let i = 0; i < megabytes; i++) if (!deflate.write(spaces)) await new Promise((resolve) => deflate.once('drain', resolve));
  deflate.end(Buffer.from('\nBT /F1 12 Tf 72 680 Td (world) Tj ET\n'));
  await done;
  return pdfWithContent(Buffer.concat(out), 792, false);
}

const task = { owner: 'team' };

describe('PDF text joining', () => {
  it.each([
    ['sentence end followed by whitespace items', [{ height: 0, items: [['End.', false, null], ['  ', true, null], ['Next', true, null]] }], 'End.  \nNext'],
    ['a CJK character outside the BMP ends a line without a space', [{ height: 0, items: [['𠀀', true, null], ['x', false, null]] }], '𠀀x'],
    ['a line ending in whitespace gets no extra space', [{ height: 0, items: [['a ', true, null], ['b', false, null]] }], 'a b'],
  ] as [string, PdfPage[], string][])('%s', (_name, pages, expected) => {
    expect(joinPdfPages(pages)).toBe(expected);
  });

  it('is linear in the items (no timing asserted: when each line end tested the whole text, 100,000 took 20 s, so these would outlast the test timeout many times over)', () => {
    const items = Array.from({ length: 500_000 }, (): PdfPage['items'][number] => ['ab', true, null]);
    const text = joinPdfPages([{ height: 0, items }]);
    expect(text.length).toBe(500_000 * 3 - 1);
  });

  it('joins in the worker: 50,000 lines drawn by a few KB of PDF', async () => {
    const lines = 50_000;
    const height = Math.ceil(lines * 1.5) + 100;
    const ops = [`BT /F1 1 Tf 1.2 TL 10 ${height * 0.92} Td`, ...Array.from({ length: lines }, () => '(ab) Tj T*'), 'ET'];
    const pdf = pdfWithContent(Buffer.from(ops.join('\n'), 'latin1'), height);
    expect(pdf.length).toBeLessThan(10_000);
    const text = await readPdfText(pdf, task);
    expect(text.startsWith('ab ab ab')).toBe(true);
  }, 30_000);
});

describe('PDF decoded-stream limit (outside the worker heap limit)', () => {
  it('a content stream inflating past the limit stops the worker: a 400, the process grown by far less than the stream', async () => {
    const pdf = await inflatingPdf(1024);
    expect(pdf.length).toBeLessThan(2 * 1024 * 1024);
    const base = process.memoryUsage.rss();
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 20);
    const error = await extractText({ buffer: pdf, filename: 'bomb.pdf' }, task).then(
      () => undefined,
      (thrown: unknown) => thrown as { httpStatus?: number; message: string },
    );
    clearInterval(sampler);
    expect(error?.httpStatus).toBe(400);
    expect(error?.message).toMatch(/Cannot read the PDF file 'bomb\.pdf': its decoded content is over 256 MB; split it/);
    // The refusal names the limit the worker counted to, so the guard stopped it there; the growth
    // is only a loose check (other unit files share this process and its RSS): decoding it whole
    // held its 1 GB of chunks, then 1 GB and 2 GB buffers, some 4 GB.
    expect((peak - base) / 2 ** 20).toBeLessThan(2048);
  }, 60_000);

  it('counts the JavaScript inflation too (pdfjs falls back to it), and reads what fits', async () => {
    const small = await inflatingPdf(4);
    await expect(readPdfText(small, task, { bufferLimitMb: 2 })).rejects.toMatchObject({ tooLarge: true });
    expect(await readPdfText(small, task, { bufferLimitMb: 64 })).toBe('hello world');
  }, 30_000);
});
