import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/infra/password-hash.js';
import { hashPassword as hashPlatformPassword, verifyPassword as verifyPlatformPassword } from '../../src/platform/identity/password.js';

/** Hashes of 'Fixture-Passw0rd' stored by the two modules this one replaced (one per realm). */
const OLD_PLATFORM_HASH = 'scrypt$16384$8$1$TURIUv8YMnc9eHPC/DHfog==$PmLObIAvQVBvFm9LjVoo7Nw8kci/73k4XTZb6L7xH3eIlWBuK4o/hCxk8PP0I910n5hv/ZR0tHsUMjOw9AYZgg==';
const OLD_CLUSTER_HASH = 'scrypt$16384$8$1$0YhY93+PXxQXFINey++cdA==$ntaCxJv+JNDhh0Eo2X7Er/5ZPKZtIuggkxiwhiKozZqm42UjjXqgiQ+hAPCtkW8boz1EsD32X92K/8d6h8kAVg==';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('password hashes stored before the shared module', () => {
  it('platform users (sha256-normalised) still log in, with the plain text or its sha256', async () => {
    expect(await verifyPlatformPassword('Fixture-Passw0rd', OLD_PLATFORM_HASH)).toBe(true);
    expect(await verifyPlatformPassword(sha256('Fixture-Passw0rd'), OLD_PLATFORM_HASH)).toBe(true);
    expect(await verifyPlatformPassword('Fixture-Passw0rd!', OLD_PLATFORM_HASH)).toBe(false);
  });

  it('cluster users (plain text) still log in', async () => {
    expect(await verifyPassword('Fixture-Passw0rd', OLD_CLUSTER_HASH)).toBe(true);
    expect(await verifyPassword('fixture-Passw0rd', OLD_CLUSTER_HASH)).toBe(false);
    // The realms differ only by the platform's normalisation.
    expect(await verifyPassword('Fixture-Passw0rd', OLD_PLATFORM_HASH)).toBe(false);
    expect(await verifyPassword(sha256('Fixture-Passw0rd'), OLD_PLATFORM_HASH)).toBe(true);
  });
});

describe('hashing and verifying', () => {
  it('stores scrypt with a fresh salt per hash', async () => {
    const first = await hashPassword('Some-Passw0rd');
    expect(first).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{86}==$/);
    expect(await hashPassword('Some-Passw0rd')).not.toBe(first);
    expect(await verifyPassword('Some-Passw0rd', first)).toBe(true);
    expect(await verifyPlatformPassword('Some-Passw0rd', await hashPlatformPassword('Some-Passw0rd'))).toBe(true);
  });

  const [, , , , salt, hash] = OLD_CLUSTER_HASH.split('$');
  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['plain text', 'Fixture-Passw0rd'],
    ['another scheme', `bcrypt$16384$8$1$${salt}$${hash}`],
    ['empty hash', `scrypt$16384$8$1$${salt}$`],
    ['N not a power of two', `scrypt$1000$8$1$${salt}$${hash}`],
    ['N needing more memory than allowed', `scrypt$1048576$8$1$${salt}$${hash}`],
    ['not a number', `scrypt$N$8$1$${salt}$${hash}`],
  ])('a %s stored value never matches', async (_name, stored) => {
    expect(await verifyPassword('Fixture-Passw0rd', stored)).toBe(false);
  });
});
