import { describe, expect, it } from 'vitest';
import { signToken, verifyToken } from '../../src/cluster/oauth/jwt.js';
import { signJwt, verifyJwt } from '../../src/infra/jwt.js';
import { signFileToken, verifyFileToken } from '../../src/platform/datasets/files/file-token.js';
import { signSessionToken, verifySessionToken } from '../../src/platform/identity/session-token.js';

/**
 * Tokens issued by the hand-written HS256 code that came before fast-jwt (fixture strings it
 * produced): they keep verifying, and the library signs the same claims to the same bytes.
 */
const ISSUED_AT = 1_700_000_000;
const at = (secondsAfterIssue: number) => (ISSUED_AT + secondsAfterIssue) * 1000;
const ids = { userId: '65a1b2c3d4e5f60718293a4b', teamId: '65a1b2c3d4e5f60718293a4c', tmbId: '65a1b2c3d4e5f60718293a4d', sid: '65a1b2c3d4e5f60718293a4e', fileId: '65a1b2c3d4e5f60718293a4f' };

const OLD_SESSION_TOKEN = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1c2VySWQiOiI2NWExYjJjM2Q0ZTVmNjA3MTgyOTNhNGIiLCJ0ZWFtSWQiOiI2NWExYjJjM2Q0ZTVmNjA3MTgyOTNhNGMiLCJ0bWJJZCI6IjY1YTFiMmMzZDRlNWY2MDcxODI5M2E0ZCIsImlzUm9vdCI6ZmFsc2UsInNpZCI6IjY1YTFiMmMzZDRlNWY2MDcxODI5M2E0ZSIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwNjA0ODAwfQ.I232WVWUjJ2MW9jKDjutfl4hdW86IMBYV3ZqwJr7XLs';
const OLD_FILE_TOKEN = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJidWNrZXROYW1lIjoiZGF0YXNldCIsInRlYW1JZCI6IjY1YTFiMmMzZDRlNWY2MDcxODI5M2E0YyIsInRtYklkIjoiNjVhMWIyYzNkNGU1ZjYwNzE4MjkzYTRkIiwiZmlsZUlkIjoiNjVhMWIyYzNkNGU1ZjYwNzE4MjkzYTRmIiwiaWF0IjoxNzAwMDAwMDAwLCJleHAiOjE3MDAwMDE4MDB9.iQb6KY4DJjMJS9Y5qYCuy4hDf2qToCmQK2yhFKnzcZw';
const OLD_CLUSTER_TOKEN = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJrdWJlc3BoZXJlIiwic3ViIjoiZnJhbmsiLCJ1c2VybmFtZSI6ImZyYW5rIiwidG9rZW5fdHlwZSI6ImFjY2Vzc190b2tlbiIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwMDA3MjAwLCJleHRyYSI6eyJ1bmluaXRpYWxpemVkIjpbInRydWUiXX19.nFXQa3m-tJ2gbOQpjqiO7Js4rb1X433ct61aWsZos8g';

describe('tokens issued before fast-jwt', () => {
  it('platform session: same claims, same bytes', () => {
    const claims = { userId: ids.userId, teamId: ids.teamId, tmbId: ids.tmbId, isRoot: false, sid: ids.sid };
    expect(verifySessionToken(OLD_SESSION_TOKEN, 'fixture-token-key-0123456789', at(60))).toEqual({ ...claims, iat: ISSUED_AT, exp: ISSUED_AT + 7 * 86400 });
    expect(verifySessionToken(OLD_SESSION_TOKEN, 'fixture-token-key-0123456789', at(7 * 86400 + 1))).toBeNull();
    expect(verifySessionToken(OLD_SESSION_TOKEN, 'another-token-key-0123456789', at(60))).toBeNull();
    expect(signSessionToken(claims, 'fixture-token-key-0123456789', at(0))).toBe(OLD_SESSION_TOKEN);
  });

  it('signed file link: same claims, same bytes', () => {
    const payload = { bucketName: 'dataset' as const, teamId: ids.teamId, tmbId: ids.tmbId, fileId: ids.fileId };
    expect(verifyFileToken('fixture-file-token-key-0123', OLD_FILE_TOKEN, at(60))).toEqual(payload);
    expect(() => verifyFileToken('fixture-file-token-key-0123', OLD_FILE_TOKEN, at(30 * 60 + 1))).toThrow(/has expired/);
    expect(() => verifyFileToken('another-file-token-key-0123', OLD_FILE_TOKEN, at(60))).toThrow(/not valid/);
    expect(signFileToken('fixture-file-token-key-0123', payload, at(0))).toBe(OLD_FILE_TOKEN);
  });

  it('cluster token (KubeSphere claims): same claims, same bytes', () => {
    const claims = { iss: 'kubesphere', sub: 'frank', username: 'frank', token_type: 'access_token' as const, iat: ISSUED_AT, exp: ISSUED_AT + 7200, extra: { uninitialized: ['true'] } };
    const secret = 'fixture-cluster-secret-0123456789';
    expect(verifyToken(OLD_CLUSTER_TOKEN, secret, new Date(at(60)))).toEqual(claims);
    expect(() => verifyToken(OLD_CLUSTER_TOKEN, secret, new Date(at(7200 + 65)))).toThrow('jwt: token is expired by 1m5s');
    expect(() => verifyToken(OLD_CLUSTER_TOKEN, 'another-cluster-secret-0123456789', new Date(at(60)))).toThrow('signature is invalid');
    expect(signToken(claims, secret)).toBe(OLD_CLUSTER_TOKEN);
  });
});

describe('cluster token refusals keep golang-jwt texts', () => {
  const secret = 'fixture-cluster-secret-0123456789';
  const [header, payload] = OLD_CLUSTER_TOKEN.split('.');
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  it.each([
    ['no dots', 'garbage', 'token contains an invalid number of segments'],
    ['four segments', `${OLD_CLUSTER_TOKEN}.x`, 'token contains an invalid number of segments'],
    ['bad header byte', 'a$b.c.d', 'illegal base64 data at input byte 1'],
    ['header of one character', 'a.b*c.d', 'illegal base64 data at input byte 0'],
    ['bad signature byte', `${header}.${payload}.ab*d`, 'illegal base64 data at input byte 2'],
    ['header not JSON', `${Buffer.from('{nope').toString('base64url')}.${payload}.abcd`, /^token is malformed: /],
    ['alg none, no signature', `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`, 'signing method none is invalid'],
    ['alg HS512', `${b64({ alg: 'HS512', typ: 'JWT' })}.${payload}.abcd`, 'signing method HS512 is invalid'],
    ['HS256, empty signature', `${header}.${payload}.`, 'signature is invalid'],
    ['tampered payload', `${header}.${b64({ username: 'root', token_type: 'access_token' })}.${OLD_CLUSTER_TOKEN.split('.')[2]}`, 'signature is invalid'],
  ])('%s', (_name, token, message) => {
    expect(() => verifyToken(token, secret, new Date(at(60)))).toThrow(message);
  });

  it('a token issued more than 10 s in the future', () => {
    expect(() => verifyToken(OLD_CLUSTER_TOKEN, secret, new Date(at(-11)))).toThrow(/^jwt: token used before issued, iat:2023-11-14 22:13:20 \+0000 UTC, now:2023-11-14 22:13:09 \+0000 UTC$/);
    expect(verifyToken(OLD_CLUSTER_TOKEN, secret, new Date(at(-10))).username).toBe('frank');
  });
});

describe('verified tokens kept per verifier', () => {
  const secret = 'kept-token-key-0123456789abcdef';
  const token = signJwt({ sub: 'kept', iat: ISSUED_AT, exp: ISSUED_AT + 60 }, secret);

  it('a kept token is still refused once expired, and its claims cannot be changed by a caller', () => {
    const claims = verifyJwt(token, secret, { nowMs: at(1) });
    expect(claims).toEqual({ sub: 'kept', iat: ISSUED_AT, exp: ISSUED_AT + 60 });
    expect(Object.isFrozen(claims)).toBe(true);
    expect(verifyJwt(token, secret, { nowMs: at(60) })).toBe(claims);
    expect(() => verifyJwt(token, secret, { nowMs: at(61) })).toThrow(/has expired/);
  });

  it('another signature on the same claims, or the kept token under another secret, is refused', () => {
    verifyJwt(token, secret, { nowMs: at(1) });
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const forged = `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    expect(() => verifyJwt(forged, secret, { nowMs: at(1) })).toThrow(/signature/);
    expect(() => verifyJwt(token, 'another-key-0123456789abcdef', { nowMs: at(1) })).toThrow(/signature/);
  });
});
