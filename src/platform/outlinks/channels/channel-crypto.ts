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

/** Reads the flat `<xml>` messages of WeChat and WeCom (CDATA or plain values). */
export function parseFlatXml(xml: string): Record<string, string> {
  const out: Record<string, string> = {};
  const pattern = /<(\w+)>(?:<!\[CDATA\[([\s\S]*?)\]\]>|([^<]*))<\/\1>/g;
  for (const match of xml.matchAll(pattern)) out[match[1]!] = match[2] ?? match[3] ?? '';
  return out;
}
