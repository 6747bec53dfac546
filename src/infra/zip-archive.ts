/**
 * Zip archives from users (a .docx is one), unpacked within limits. The central directory is
 * read first and the archive refused when its entry count or declared sizes exceed the limits;
 * each entry is then inflated (off the event loop) with its declared size as a hard cap, so an
 * archive that lies about its sizes is refused as well. The result is a copy of the archive with
 * every entry stored, which a parser such as mammoth reads without inflating anything itself.
 */
import { promisify } from 'node:util';
import { inflateRaw } from 'node:zlib';

const inflate = promisify(inflateRaw);

export interface ZipLimits {
  maxEntries: number;
  /** Declared uncompressed size of one entry. */
  maxEntryBytes: number;
  /** Declared uncompressed size of all entries together. */
  maxTotalBytes: number;
}

export class ZipArchiveError extends Error {
  override name = 'ZipArchiveError';
}

export interface ZipEntry {
  name: string;
  method: number;
  crc: number;
  size: number;
  /** The entry's bytes as found in the archive (deflated or stored). */
  data: Buffer;
}

const END = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_END = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX16 = 0xffff;
const MAX32 = 0xffffffff;
const UTF8_NAMES = 0x0800;
const STORED = 0;
const DEFLATED = 8;

const describeSize = (bytes: number) => (bytes < 2 ** 20 ? `${bytes} bytes` : `${Math.ceil(bytes / 2 ** 20)} MB`);
const malformed = (what: string) => new ZipArchiveError(`not a valid zip archive: ${what}`);
/** An entry's name for a message: quoted, escaped and cut short. */
const labelOf = (name: string) => JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name);

function reader(buffer: Buffer) {
  const need = (at: number, length: number, what: string) => {
    if (at < 0 || length < 0 || at + length > buffer.length) throw malformed(`${what} lies outside the file`);
  };
  return {
    need,
    u16: (at: number) => buffer.readUInt16LE(at),
    u32: (at: number) => buffer.readUInt32LE(at),
    u64: (at: number) => Number(buffer.readBigUInt64LE(at)),
  };
}

/** Where the central directory is and how many entries it declares (ZIP64 when the classic fields overflow). */
function locateDirectory(buffer: Buffer): { count: number; offset: number; size: number } {
  const { need, u16, u32, u64 } = reader(buffer);
  let end = -1;
  // The end record is the last 22 bytes, followed by a comment of at most 64 KB.
  for (let at = buffer.length - 22; at >= Math.max(0, buffer.length - 22 - MAX16); at--) {
    if (u32(at) === END) {
      end = at;
      break;
    }
  }
  if (end < 0) throw malformed('no end of central directory');
  const classic = { count: u16(end + 10), size: u32(end + 12), offset: u32(end + 16) };
  if (classic.count !== MAX16 && classic.size !== MAX32 && classic.offset !== MAX32) return classic;
  need(end - 20, 20, 'the ZIP64 locator');
  if (u32(end - 20) !== ZIP64_LOCATOR) throw malformed('no ZIP64 locator');
  const record = u64(end - 20 + 8);
  need(record, 56, 'the ZIP64 end record');
  if (u32(record) !== ZIP64_END) throw malformed('no ZIP64 end record');
  return { count: u64(record + 32), size: u64(record + 40), offset: u64(record + 48) };
}

/** The sizes and offset a ZIP64 extra field carries, for those the classic fields mark as overflowed. */
function zip64Values(extra: Buffer, overflowed: { size: boolean; compressedSize: boolean; offset: boolean }) {
  for (let at = 0; at + 4 <= extra.length; at += 4 + extra.readUInt16LE(at + 2)) {
    if (extra.readUInt16LE(at) !== 0x0001) continue;
    const values: number[] = [];
    const count = [overflowed.size, overflowed.compressedSize, overflowed.offset].filter(Boolean).length;
    if (extra.readUInt16LE(at + 2) < count * 8 || at + 4 + count * 8 > extra.length) break;
    for (let i = 0; i < count; i++) values.push(Number(extra.readBigUInt64LE(at + 4 + i * 8)));
    return {
      size: overflowed.size ? values.shift() : undefined,
      compressedSize: overflowed.compressedSize ? values.shift() : undefined,
      offset: overflowed.offset ? values.shift() : undefined,
    };
  }
  throw malformed('an entry lacks its ZIP64 sizes');
}

/** The entries of the central directory, refused before any inflating when they exceed `limits`. */
export function readZipDirectory(buffer: Buffer, limits: ZipLimits): ZipEntry[] {
  const { need, u16, u32 } = reader(buffer);
  const directory = locateDirectory(buffer);
  if (directory.count > limits.maxEntries) throw new ZipArchiveError(`the archive has ${directory.count} entries, over the limit of ${limits.maxEntries}`);
  need(directory.offset, directory.size, 'the central directory');
  const entries: ZipEntry[] = [];
  let total = 0;
  let at = directory.offset;
  for (let i = 0; i < directory.count; i++) {
    need(at, 46, 'a central directory entry');
    if (u32(at) !== CENTRAL) throw malformed('a central directory entry has no signature');
    const flags = u16(at + 8);
    const method = u16(at + 10);
    const nameLength = u16(at + 28);
    const extraLength = u16(at + 30);
    need(at + 46, nameLength + extraLength + u16(at + 32), 'a central directory entry');
    const rawName = buffer.subarray(at + 46, at + 46 + nameLength);
    const name = rawName.toString(flags & UTF8_NAMES ? 'utf8' : 'latin1');
    let compressedSize = u32(at + 20);
    let size = u32(at + 24);
    let offset = u32(at + 42);
    const overflowed = { size: size === MAX32, compressedSize: compressedSize === MAX32, offset: offset === MAX32 };
    if (overflowed.size || overflowed.compressedSize || overflowed.offset) {
      const wide = zip64Values(buffer.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength), overflowed);
      size = wide.size ?? size;
      compressedSize = wide.compressedSize ?? compressedSize;
      offset = wide.offset ?? offset;
    }
    const label = labelOf(name);
    if (flags & 0x0001) throw new ZipArchiveError(`entry ${label} is encrypted`);
    if (method !== STORED && method !== DEFLATED) throw new ZipArchiveError(`entry ${label} uses an unsupported compression method (${method})`);
    if (size > limits.maxEntryBytes) {
      throw new ZipArchiveError(`entry ${label} unpacks to ${describeSize(size)}, over the limit of ${describeSize(limits.maxEntryBytes)} per entry`);
    }
    total += size;
    if (total > limits.maxTotalBytes) throw new ZipArchiveError(`the entries unpack to more than ${describeSize(limits.maxTotalBytes)} in total`);
    need(offset, 30, `the local header of entry ${label}`);
    if (u32(offset) !== LOCAL) throw malformed(`the local header of entry ${label} has no signature`);
    const dataStart = offset + 30 + u16(offset + 26) + u16(offset + 28);
    need(dataStart, compressedSize, `the data of entry ${label}`);
    if (method === STORED && compressedSize !== size) throw malformed(`stored entry ${label} has two different sizes`);
    entries.push({ name, method, crc: u32(at + 16), size, data: buffer.subarray(dataStart, dataStart + compressedSize) });
    at += 46 + nameLength + extraLength + u16(at + 32);
  }
  return entries;
}

async function unpackEntry(entry: ZipEntry): Promise<Buffer> {
  if (entry.method === STORED) return entry.data;
  const label = labelOf(entry.name);
  let data: Buffer;
  try {
    data = await inflate(entry.data, { maxOutputLength: Math.max(entry.size, 1) });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new ZipArchiveError(`entry ${label} unpacks to more than the ${entry.size} bytes it declares`);
    }
    throw new ZipArchiveError(`entry ${label} cannot be inflated (${(error as Error).message})`);
  }
  if (data.length !== entry.size) throw new ZipArchiveError(`entry ${label} unpacks to ${data.length} bytes, not the ${entry.size} it declares`);
  return data;
}

/**
 * The archive with every entry stored (names as UTF-8, no extra fields), after checking it
 * against `limits`. Rejects with ZipArchiveError. The result has its own ArrayBuffer, so it can
 * be transferred to a worker thread.
 */
export async function toStoredZip(buffer: Buffer, limits: ZipLimits): Promise<Buffer<ArrayBuffer>> {
  const entries = readZipDirectory(buffer, limits).map((entry) => ({ ...entry, rawName: Buffer.from(entry.name, 'utf8') }));
  const localBytes = entries.reduce((sum, entry) => sum + 30 + entry.rawName.length + entry.size, 0);
  const directoryBytes = entries.reduce((sum, entry) => sum + 46 + entry.rawName.length, 0);
  const out = Buffer.alloc(localBytes + directoryBytes + 22);
  let local = 0;
  let central = localBytes;
  for (const entry of entries) {
    // One entry inflated at a time, straight into place: memory stays at the archive's unpacked size.
    const data = await unpackEntry(entry);
    // The local header and the central record share these fields; the central one starts with "version made by".
    const writeShared = (at: number, shift: number) => {
      out.writeUInt16LE(20, at + 4 + shift);
      out.writeUInt16LE(UTF8_NAMES, at + 6 + shift);
      out.writeUInt32LE(entry.crc, at + 14 + shift);
      out.writeUInt32LE(entry.size, at + 18 + shift);
      out.writeUInt32LE(entry.size, at + 22 + shift);
      out.writeUInt16LE(entry.rawName.length, at + 26 + shift);
    };
    out.writeUInt32LE(LOCAL, local);
    writeShared(local, 0);
    entry.rawName.copy(out, local + 30);
    out.writeUInt32LE(CENTRAL, central);
    out.writeUInt16LE(20, central + 4);
    writeShared(central, 2);
    out.writeUInt32LE(local, central + 42);
    entry.rawName.copy(out, central + 46);
    data.copy(out, local + 30 + entry.rawName.length);
    local += 30 + entry.rawName.length + entry.size;
    central += 46 + entry.rawName.length;
  }
  out.writeUInt32LE(END, central);
  out.writeUInt16LE(entries.length, central + 8);
  out.writeUInt16LE(entries.length, central + 10);
  out.writeUInt32LE(directoryBytes, central + 12);
  out.writeUInt32LE(localBytes, central + 16);
  return out;
}
