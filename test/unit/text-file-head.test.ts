import { describe, expect, it } from 'vitest';
import { extractText } from '../../src/infra/text-extract.js';
import { textFileHead } from '../../src/platform/chat/workflow-nodes/text-file-head.js';

const utf16 = (text: string, bigEndian: boolean) => {
  const le = Buffer.from(text, 'utf16le');
  if (bigEndian) le.swap16();
  return Buffer.concat([Buffer.from(bigEndian ? [0xfe, 0xff] : [0xff, 0xfe]), le]);
};
// '中文测试' in GB18030 (not valid UTF-8).
const gb18030 = Buffer.from([0xd6, 0xd0, 0xce, 0xc4, 0xb2, 0xe2, 0xca, 0xd4]);

/** Files read whole: the same text as the shared extractor, whatever the encoding or slice boundaries. */
const wholeCases: { name: string; buffer: Buffer }[] = [
  { name: 'UTF-8 with CRLF and blank lines', buffer: Buffer.from('  a\r\nb\r\n\r\n\r\n\r\nc\rd  ') },
  { name: 'UTF-8 BOM', buffer: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('héllo')]) },
  { name: 'UTF-16LE BOM', buffer: utf16('héllo 中文', false) },
  { name: 'UTF-16BE BOM', buffer: utf16('héllo 中文', true) },
  { name: 'GB18030', buffer: Buffer.concat([gb18030, Buffer.from(' ok')]) },
  // Three-byte characters across the 1 MB slice boundaries.
  { name: 'UTF-8 over several slices', buffer: Buffer.from('中文 text\n'.repeat(300_000)) },
  { name: 'GB18030 over several slices', buffer: Buffer.concat(Array.from({ length: 300_000 }, () => gb18030)) },
];

describe('textFileHead', () => {
  for (const c of wholeCases) {
    it(`${c.name}: the extractor's text`, async () => {
      const { text } = await extractText({ buffer: c.buffer, filename: 'a.txt' }, { owner: undefined });
      expect(await textFileHead(c.buffer, 'a.txt', Number.MAX_SAFE_INTEGER)).toEqual({ text, whole: true });
    });
  }

  it('refuses what the extractor refuses', async () => {
    await expect(textFileHead(Buffer.from('text\u0000\u0001'), 'a.txt', 100)).rejects.toThrow("File 'a.txt' is binary, not text");
    await expect(textFileHead(Buffer.from([0x41, 0xff, 0xff, 0xff]), 'a.txt', 100)).rejects.toThrow("File 'a.txt' is not valid text");
    await expect(textFileHead(Buffer.from(' \n\n '), 'a.txt', 100)).rejects.toThrow("File 'a.txt' contains no text");
  });

  it('decodes no further than the characters asked for: the rest of a large file is never read', async () => {
    // 3 MB of text, then bytes that would make the whole file binary.
    const buffer = Buffer.concat([Buffer.from('lorem ipsum\n'.repeat(262_144)), Buffer.alloc(1024)]);
    const { text, whole } = await textFileHead(buffer, 'a.txt', 1000);
    expect(whole).toBe(false);
    expect(text.length).toBeGreaterThan(1000);
    expect(text.startsWith('lorem ipsum\nlorem ipsum\n')).toBe(true);
    await expect(textFileHead(buffer, 'a.txt', Number.MAX_SAFE_INTEGER)).rejects.toThrow('binary');
  });

  it('hands the event loop back between slices', async () => {
    let otherWorkRan = false;
    setImmediate(() => {
      otherWorkRan = true;
    });
    await textFileHead(Buffer.from('x'.repeat(3 * 1024 * 1024)), 'a.txt', Number.MAX_SAFE_INTEGER);
    expect(otherWorkRan).toBe(true);
  });
});
