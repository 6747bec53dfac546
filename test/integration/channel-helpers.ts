/** What the messaging platforms do to a callback before it reaches a receiver, for the channel tests. */
import { createCipheriv, createHash, randomBytes } from 'node:crypto';

/** WeChat's and WeCom's signature: sha1 of the sorted parts. */
export const sha1 = (parts: string[]) => createHash('sha1').update([...parts].sort().join('')).digest('hex');

/** A 43-character CallbackEncodingAesKey. */
export const AES_KEY = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';

/** What the WeCom server does: random16 + length + message + corpId, PKCS#7 to 32, AES-256-CBC. */
export function wecomEncrypt(message: string, corpId: string): string {
  const key = Buffer.from(`${AES_KEY}=`, 'base64');
  const body = Buffer.from(message);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  let plain = Buffer.concat([randomBytes(16), length, body, Buffer.from(corpId)]);
  const pad = 32 - (plain.length % 32);
  plain = Buffer.concat([plain, Buffer.alloc(pad, pad)]);
  const cipher = createCipheriv('aes-256-cbc', key, key.subarray(0, 16));
  cipher.setAutoPadding(false);
  return Buffer.concat([cipher.update(plain), cipher.final()]).toString('base64');
}

/** What Feishu does with an encryptKey: base64(iv + AES-256-CBC(sha256(key), iv, text)); a value is sent as its JSON. */
export function feishuEncrypt(json: unknown, encryptKey: string): string {
  const key = createHash('sha256').update(encryptKey).digest();
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-cbc', key, iv);
  const text = typeof json === 'string' ? json : JSON.stringify(json);
  return Buffer.concat([iv, cipher.update(text), cipher.final()]).toString('base64');
}
