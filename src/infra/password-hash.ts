import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password storage for both APIs: scrypt with a per-user 16-byte salt, stored as
 * `scrypt$N$r$p$salt$hash` (base64 salt and hash). Async, so the KDF runs on the libuv pool,
 * off the event loop. What a realm hashes (the platform first normalises to sha256 hex) is the
 * realm's rule; this module only stores and compares.
 */
const PARAMS = { N: 16384, r: 8, p: 1, keyLength: 64 } as const;
const STORED = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

function derive(secret: string, salt: Buffer, params: { N: number; r: number; p: number; keyLength: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const { N, r, p, keyLength } = params;
    scrypt(secret, salt, keyLength, { N, r, p, maxmem: 64 * 1024 * 1024 }, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Constant-time check against a stored hash; a missing, malformed or impossible one never matches. */
export async function verifyPassword(password: string, stored: string | undefined | null): Promise<boolean> {
  const match = STORED.exec(stored ?? '');
  if (!match) return false;
  const [, n, r, p, salt, hash] = match as unknown as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64');
  const params = { N: Number(n), r: Number(r), p: Number(p), keyLength: expected.length };
  // Parameters scrypt refuses (or that need more memory than allowed) come from a damaged record.
  const key = await derive(password, Buffer.from(salt, 'base64'), params).catch(() => null);
  return key !== null && key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash to verify against when the account does not exist, so both paths cost the same. */
let decoy: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  return decoy;
}
