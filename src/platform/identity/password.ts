import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password storage as DECISIONS.md says: the reference web client sends sha256(password) as
 * hex, other clients send the plain text; both are normalised to that hex form, then stored
 * with scrypt (async, so the KDF runs on the libuv pool, off the event loop).
 */
const SCRYPT = { N: 16384, r: 8, p: 1, keyLength: 64 } as const;

function scryptAsync(secret: string, salt: Buffer, N: number, r: number, p: number, keyLength: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, keyLength, { N, r, p, maxmem: 64 * 1024 * 1024 }, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

/** A 64-hex value is taken as the client's sha256 already; anything else is hashed first. */
export function normalizePassword(received: string): string {
  if (/^[0-9a-fA-F]{64}$/.test(received)) return received.toLowerCase();
  return createHash('sha256').update(received, 'utf8').digest('hex');
}

/** `scrypt$N$r$p$salt$hash` (base64 salt and hash), from a password as received. */
export async function hashPassword(received: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(normalizePassword(received), salt, SCRYPT.N, SCRYPT.r, SCRYPT.p, SCRYPT.keyLength);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Constant-time check of a received password against a stored hash; malformed hashes never match. */
export async function verifyPassword(received: string, stored: string | undefined | null): Promise<boolean> {
  const parts = (stored ?? '').split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltText, hashText] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hashText, 'base64');
  if (expected.length === 0) return false;
  const key = await scryptAsync(normalizePassword(received), Buffer.from(saltText, 'base64'), Number(n), Number(r), Number(p), expected.length);
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash to verify against when the account does not exist, so both paths cost the same. */
let decoyHash: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
  return decoyHash;
}
