import { describe, expect, it } from 'vitest';
import { readZipDirectory, toStoredZip, ZipArchiveError, type ZipLimits } from '../../src/infra/zip-archive.js';
import { makeZip } from '../fixtures/files/make-fixtures.js';

const LIMITS: ZipLimits = { maxEntries: 3, maxEntryBytes: 1000, maxTotalBytes: 1500 };
const TEXT = 'zip '.repeat(100); // 400 bytes, deflates well

/** The archive with the general purpose flags and method of its first central directory entry replaced. */
function withCentralFields(zip: Buffer, flags: number, method: number): Buffer {
  const copy = Buffer.from(zip);
  const central = copy.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
  copy.writeUInt16LE(flags, central + 8);
  copy.writeUInt16LE(method, central + 10);
  return copy;
}

describe('toStoredZip refuses', () => {
  it.each([
    ['too many entries', makeZip({ a: 'a', b: 'b', c: 'c', d: 'd' }), /the archive has 4 entries, over the limit of 3/],
    // Its data is not deflate data: refused before inflating.
    ['an entry declared over the per-entry limit', withCentralFields(makeZip({ big: 'x' }, { declaredSizes: { big: 2000 } }), 0x0800, 8), /entry "big" unpacks to 2000 bytes, over the limit of 1000 bytes per entry/],
    ['entries declared over the total limit', makeZip({ a: TEXT, b: TEXT, c: TEXT.repeat(2) }), /the entries unpack to more than 1500 bytes in total/],
    ['a deflated entry larger than it declares', makeZip({ a: TEXT.repeat(2) }, { deflate: true, declaredSizes: { a: 10 } }), /entry "a" unpacks to more than the 10 bytes it declares/],
    ['a deflated entry smaller than it declares', makeZip({ a: TEXT }, { deflate: true, declaredSizes: { a: 900 } }), /entry "a" unpacks to 400 bytes, not the 900 it declares/],
    ['a stored entry with two sizes', makeZip({ a: TEXT }, { declaredSizes: { a: 900 } }), /stored entry "a" has two different sizes/],
    ['corrupt deflated data', withCentralFields(makeZip({ a: TEXT }), 0x0800, 8), /entry "a" cannot be inflated/],
    ['an encrypted entry', withCentralFields(makeZip({ a: TEXT }), 0x0801, 0), /entry "a" is encrypted/],
    ['an unsupported compression method', withCentralFields(makeZip({ a: TEXT }), 0x0800, 12), /unsupported compression method \(12\)/],
    ['no zip at all', Buffer.from('hello, not a zip'), /not a valid zip archive: no end of central directory/],
    ['a directory outside the file', makeZip({ a: TEXT }).subarray(400), /lies outside the file/],
  ])('%s', async (_name, zip, message) => {
    const error = await toStoredZip(zip, LIMITS).then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(ZipArchiveError);
    expect((error as Error).message).toMatch(message);
  });
});

describe('toStoredZip unpacks', () => {
  const entries = { 'word/document.xml': TEXT, 'média/ü.txt': 'ünïcode', 'empty.txt': '' };

  it.each([
    ['stored entries', {}],
    ['deflated entries', { deflate: true }],
    ['ZIP64 records', { deflate: true, zip64: true }],
  ])('%s into an archive of stored entries with the same contents', async (_name, options) => {
    const stored = await toStoredZip(makeZip(entries, options), LIMITS);
    const unpacked = readZipDirectory(stored, LIMITS);
    expect(unpacked.map(({ name, method, size, data }) => ({ name, method, size, text: data.toString('utf8') }))).toEqual(
      Object.entries(entries).map(([name, text]) => ({ name, method: 0, size: Buffer.byteLength(text), text })),
    );
    expect(stored.byteOffset).toBe(0);
    expect(stored.buffer.byteLength).toBe(stored.length); // its own ArrayBuffer: transferable to a worker
  });
});
