import { describe, expect, it } from 'vitest';
import { apiKeyRefusal, createAuthenticator, isBearerAuthorization, parseApiKeyCredential } from '../../src/platform/auth/authenticator.js';
import { generateApiKey } from '../../src/platform/identity/api-keys.service.js';
import { hashPassword, normalizePassword, verifyPassword } from '../../src/platform/identity/password.js';
import { signSessionToken, verifySessionToken } from '../../src/platform/identity/session-token.js';
import { resolveTeamPermission, serializeTeamPermission, teamPermissionAllows } from '../../src/platform/identity/team-permission.js';
import { stripJsonComments } from '../../src/platform/system/model-config.js';

const SHA_OF_ABC = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';

describe('passwords', () => {
  it.each([
    ['abc', SHA_OF_ABC],
    [SHA_OF_ABC, SHA_OF_ABC],
    [SHA_OF_ABC.toUpperCase(), SHA_OF_ABC],
    ['x'.repeat(64), normalizePassword('x'.repeat(64))],
  ])('normalises %s', (input, expected) => {
    expect(normalizePassword(input)).toBe(expected);
  });

  it('verifies the plain text and its sha256 alike, and nothing else', async () => {
    const stored = await hashPassword('abc');
    expect(stored).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifyPassword('abc', stored)).toBe(true);
    expect(await verifyPassword(SHA_OF_ABC, stored)).toBe(true);
    expect(await verifyPassword('abd', stored)).toBe(false);
    expect(await verifyPassword('abc', 'plain-text-value')).toBe(false);
    expect(await verifyPassword('abc', undefined)).toBe(false);
    expect(await hashPassword('abc')).not.toBe(stored);
  });
});

describe('session tokens', () => {
  const claims = { userId: 'u'.repeat(24), teamId: 't'.repeat(24), tmbId: 'm'.repeat(24), isRoot: false, sid: 's'.repeat(24) };
  const now = 1_700_000_000;
  const ms = (seconds: number) => seconds * 1000;
  it('round-trips and expires after 7 days', () => {
    const token = signSessionToken(claims, 'key-0123456789abcdef', ms(now));
    expect(verifySessionToken(token, 'key-0123456789abcdef', ms(now + 10))).toMatchObject({ ...claims, iat: now, exp: now + 7 * 86400 });
    expect(verifySessionToken(token, 'key-0123456789abcdef', ms(now + 7 * 86400))).not.toBeNull();
    expect(verifySessionToken(token, 'key-0123456789abcdef', ms(now + 7 * 86400) + 1)).toBeNull();
  });
  it.each([
    ['another key', (token: string) => token, 'other-key-0123456789'],
    ['tampered payload', (token: string) => token.replace(/\.[^.]+\./, `.${Buffer.from(JSON.stringify({ ...claims, isRoot: true, exp: now + 99 })).toString('base64url')}.`), 'key-0123456789abcdef'],
    ['alg none', (token: string) => `${Buffer.from('{"alg":"none"}').toString('base64url')}.${token.split('.')[1]}.`, 'key-0123456789abcdef'],
    ['garbage', () => 'a.b.c', 'key-0123456789abcdef'],
  ])('refuses %s', (_name, mutate, key) => {
    expect(verifySessionToken(mutate(signSessionToken(claims, 'key-0123456789abcdef', ms(now))), key, ms(now + 1))).toBeNull();
  });
});

describe('API key credentials', () => {
  it.each([
    ['Bearer fastgpt-abc', { key: 'fastgpt-abc' }],
    ['Bearer fastgpt-abc-64b0c0ffee0000000000abcd', { key: 'fastgpt-abc', appId: '64b0c0ffee0000000000abcd' }],
    ['Bearer fastgpt', null],
    ['Bearer a-b-c-d', null],
    ['Bearer', null],
    ['fastgpt-abc', null],
  ])('parses %s', (header, expected) => {
    expect(parseApiKeyCredential(header)).toEqual(expected);
  });

  it.each([
    ['Bearer fastgpt-abc', true],
    ['bearer fastgpt-abc', true],
    ['  BEARER\tfastgpt-abc', true],
    ['Bearer', true],
    ['Basic dXNlcjpwYXNz', false],
    ['Digest username="proxy-user", realm="x"', false],
    ['Token fastgpt-abc', false],
    ['Bearerfastgpt-abc', false],
    ['fastgpt-abc', false],
  ])('reads %j as an API key attempt: %s', (header, expected) => {
    expect(isBearerAuthorization(header)).toBe(expected);
  });

  it.each([
    [{ limit: { maxUsagePoints: -1 }, usagePoints: 1e9 }, null],
    [{ limit: { maxUsagePoints: 10 }, usagePoints: 9 }, null],
    [{ limit: { maxUsagePoints: 10 }, usagePoints: 10 }, 403],
    [{ limit: { maxUsagePoints: 0 }, usagePoints: 0 }, 403],
    [{ limit: { maxUsagePoints: -1, expiredTime: new Date(2000) }, usagePoints: 0 }, 401],
    [{ limit: { maxUsagePoints: -1, expiredTime: new Date(3000) }, usagePoints: 0 }, null],
  ])('limits %j', (key, status) => {
    expect(apiKeyRefusal(key, 2000)?.httpStatus ?? null).toBe(status);
  });

  it('generates keys of the reference shape', () => {
    for (let i = 0; i < 20; i++) expect(generateApiKey()).toMatch(/^fastgpt-[a-z][a-zA-Z0-9]{51,64}$/);
  });
});

describe('team permission', () => {
  it.each([
    [{ role: 'owner', isRoot: false }, 0xffffffff],
    [{ role: 'member', isRoot: true }, 0xffffffff],
    [{ role: 'member', isRoot: false, row: 6 }, 6],
    [{ role: 'admin', isRoot: false }, 7],
    [{ role: 'admin', isRoot: false, row: 4 }, 4],
    [{ role: 'member', isRoot: false }, 4],
    [{ role: 'member', isRoot: false, teamDefault: 6 }, 6],
  ] as const)('resolves %j', (input, expected) => {
    expect(resolveTeamPermission(input)).toBe(expected);
  });
  it.each([
    [4, 'read', true],
    [4, 'write', false],
    [6, 'write', true],
    [6, 'manage', false],
    [7, 'write', true],
    [7, 'owner', false],
    [0xffffffff, 'owner', true],
  ] as const)('%i allows %s: %s', (value, required, expected) => {
    expect(teamPermissionAllows(value, required)).toBe(expected);
  });
  it('serialises like the reference', () => {
    expect(serializeTeamPermission(6)).toEqual({ value: 6, isOwner: false, hasManagePer: false, hasWritePer: true, hasReadPer: true });
  });
});

describe('config.json comments', () => {
  it('strips comments outside strings and trailing commas', () => {
    const text = '{ // c\n "url": "http://x//y", /* block */ "a": [1,2,], }';
    expect(JSON.parse(stripJsonComments(text))).toEqual({ url: 'http://x//y', a: [1, 2] });
  });
});

describe('credential resolvers', () => {
  // No database is reached: resolvers run first and a request without credentials stops there.
  const authenticator = createAuthenticator({ tokenKey: 'k'.repeat(16), rootKey: 'r'.repeat(16), now: () => 0 } as never);
  const withLink = { headers: {}, body: { shareId: 's1', outLinkUid: 'u1' } } as never;

  it('accepts outLink only once a resolver is registered, and tries it first', async () => {
    await expect(authenticator.authenticate(withLink, ['outLink'])).rejects.toMatchObject({ httpStatus: 401, statusText: 'unAuthorization' });
    authenticator.registerResolver('outLink', async (request) => {
      const body = request.body as { shareId?: string };
      return body?.shareId ? { authType: 'outLink', userId: '', teamId: 't', tmbId: 'm', role: 'member', teamPermission: 4, isRoot: false } : null;
    });
    await expect(authenticator.authenticate(withLink, ['outLink', 'session'])).resolves.toMatchObject({ authType: 'outLink' });
    const none = authenticator.authenticate({ headers: {}, body: {} } as never, ['outLink']);
    await expect(none).rejects.toMatchObject({ httpStatus: 401, message: expect.stringContaining('outLink') });
    // A route that does not list the kind never consults the resolver.
    await expect(authenticator.authenticate(withLink, ['session'])).rejects.toMatchObject({ httpStatus: 401 });
  });
});
