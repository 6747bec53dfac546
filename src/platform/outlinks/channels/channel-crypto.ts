/** Signature checks and message crypto of the messaging channels (Feishu, WeCom, WeChat). */
import { createDecipheriv, createHash } from 'node:crypto';
import { Errors } from '../../../infra/errors.js';

export { sameSecret as sameText } from '../../../infra/secret-compare.js';

export function sha1Signature(parts: string[]): string {
  return createHash('sha1').update([...parts].sort().join('')).digest('hex');
}

/** Feishu's event signature (X-Lark-Signature): sha256 hex of timestamp + nonce + encryptKey + the raw body. */
export function feishuSignature(timestamp: string, nonce: string, encryptKey: string, rawBody: string): string {
  return createHash('sha256').update(timestamp + nonce + encryptKey + rawBody).digest('hex');
}

/**
 * How far a signed callback's timestamp (seconds) may be from this server's clock. The
 * channels sign a timestamp but never say when a signature expires: without a bound, one signed
 * query string seen once (WeChat's covers no body) authenticates any message for ever.
 */
export const SIGNATURE_WINDOW_MS = 5 * 60_000;

export function withinSignatureWindow(timestamp: string, nowMs: number): boolean {
  if (!/^\d{1,12}$/.test(timestamp)) return false;
  return Math.abs(Number(timestamp) * 1000 - nowMs) <= SIGNATURE_WINDOW_MS;
}

/** WeChat and WeCom sign a timestamp (seconds): a signature is good within its window only. */
export function assertFreshSignature(timestamp: string, nowMs: number): void {
  if (!withinSignatureWindow(timestamp, nowMs)) throw Errors.channelLinkRefused('The signature’s timestamp is more than 5 minutes away from this server’s clock');
}

/** Feishu "encrypt" payloads: AES-256-CBC, key sha256(encryptKey), IV = first 16 bytes. */
export function feishuDecrypt(encrypted: string, encryptKey: string): string {
  const key = createHash('sha256').update(encryptKey).digest();
  const raw = Buffer.from(encrypted, 'base64');
  const decipher = createDecipheriv('aes-256-cbc', key, raw.subarray(0, 16));
  return Buffer.concat([decipher.update(raw.subarray(16)), decipher.final()]).toString('utf8');
}

/** WeCom/WeChat message crypto: AES-256-CBC, key = base64(aesKey + '='), IV = key[0..16], PKCS#7 to 32. */
export function wecomDecrypt(encrypted: string, encodingAesKey: string): { message: string; receiveId: string } {
  const key = Buffer.from(`${encodingAesKey}=`, 'base64');
  const decipher = createDecipheriv('aes-256-cbc', key, key.subarray(0, 16));
  decipher.setAutoPadding(false);
  let plain = Buffer.concat([decipher.update(Buffer.from(encrypted, 'base64')), decipher.final()]);
  const pad = plain[plain.length - 1] ?? 0;
  if (pad >= 1 && pad <= 32) plain = plain.subarray(0, plain.length - pad);
  const length = plain.readUInt32BE(16);
  return { message: plain.subarray(20, 20 + length).toString('utf8'), receiveId: plain.subarray(20 + length).toString('utf8') };
}

/** How much searching a parse did (characters each search passed over): tests bound it by the input's length. */
export interface XmlScanWork {
  chars: number;
}

/**
 * The `<tag>value</tag>` pairs of a flat `<xml>` message of WeChat or WeCom (CDATA or plain
 * values), left to right; `stopAt` ends the scan at the first value of that tag. A single
 * forward scan: every search starts past the previous one, so the work is linear in the input
 * (a backtracking pattern here was quadratic on unclosed CDATA openers, before any signature check).
 */
function scanFlatXml(xml: string, visit: (name: string, value: string) => boolean, work?: XmlScanWork): void {
  const find = (needle: string, from: number) => {
    const at = xml.indexOf(needle, from);
    if (work) work.chars += (at < 0 ? xml.length : at + needle.length) - from;
    return at;
  };
  const tagName = /\w+>/y;
  let i = 0;
  for (;;) {
    const open = find('<', i);
    if (open < 0) return;
    tagName.lastIndex = open + 1;
    const tag = tagName.exec(xml);
    if (!tag) {
      i = open + 1;
      continue;
    }
    if (work) work.chars += tag[0].length;
    const name = tag[0].slice(0, -1);
    const start = tagName.lastIndex;
    const closer = `</${name}>`;
    if (xml.startsWith('<![CDATA[', start)) {
      const end = find(']]>', start + 9);
      // An unclosed CDATA section: nothing after it can be a value.
      if (end < 0) return;
      if (xml.startsWith(closer, end + 3)) {
        if (visit(name, xml.slice(start + 9, end))) return;
        i = end + 3 + closer.length;
      } else {
        // CDATA content is text, never markup: go on after it.
        i = end + 3;
      }
      continue;
    }
    const end = find('<', start);
    if (end < 0) return;
    if (xml.startsWith(closer, end)) {
      if (visit(name, xml.slice(start, end))) return;
      i = end + closer.length;
    } else {
      // A container (`<xml>`): its children come next.
      i = end;
    }
  }
}

/** Reads the flat `<xml>` messages of WeChat and WeCom (CDATA or plain values); linear in the input. */
export function parseFlatXml(xml: string, work?: XmlScanWork): Record<string, string> {
  const out: Record<string, string> = {};
  scanFlatXml(
    xml,
    (name, value) => {
      out[name] = value;
      return false;
    },
    work,
  );
  return out;
}

/** The first value of one tag of a flat `<xml>` message ('' when absent): what a signature check needs, before any other parsing. */
export function flatXmlValue(xml: string, tag: string): string {
  let found = '';
  scanFlatXml(xml, (name, value) => {
    if (name !== tag) return false;
    found = value;
    return true;
  });
  return found;
}
