import { createHmac, timingSafeEqual } from 'node:crypto';
import { Errors } from '../../../infra/errors.js';
import type { BucketName } from './file.repo.js';

export interface FileTokenPayload {
  bucketName: BucketName;
  teamId: string;
  tmbId: string;
  fileId: string;
}

/** Read links expire: 30 minutes for dataset files, 7 days for chat files (as the reference). */
export const FILE_TOKEN_TTL_SECONDS: Record<BucketName, number> = { dataset: 30 * 60, chat: 7 * 24 * 3600 };

const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** An HS256 JWT signed with FILE_TOKEN_KEY, carrying the file's bucket, team, member and id. */
export function signFileToken(key: string, payload: FileTokenPayload, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const head = b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = b64(JSON.stringify({ ...payload, iat: nowSeconds, exp: nowSeconds + FILE_TOKEN_TTL_SECONDS[payload.bucketName] }));
  const signature = createHmac('sha256', key).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${signature}`;
}

export function verifyFileToken(key: string, token: string, nowSeconds = Math.floor(Date.now() / 1000)): FileTokenPayload {
  const [head, body, signature] = token.split('.');
  if (!head || !body || !signature) throw Errors.unAuthFile('The file token is malformed');
  const expected = createHmac('sha256', key).update(`${head}.${body}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw Errors.unAuthFile('The file token is not valid');
  let claims: Partial<FileTokenPayload> & { exp?: number };
  try {
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw Errors.unAuthFile('The file token is malformed');
  }
  if (!claims.exp || claims.exp < nowSeconds) throw Errors.unAuthFile('The file token has expired');
  if (!claims.bucketName || !claims.teamId || !claims.tmbId || !claims.fileId) throw Errors.unAuthFile('The file token is incomplete');
  return { bucketName: claims.bucketName, teamId: claims.teamId, tmbId: claims.tmbId, fileId: claims.fileId };
}

export const fileReadUrl = (token: string, filename?: string) =>
  `/api/common/file/read?${filename ? `filename=${encodeURIComponent(filename)}&` : ''}token=${token}`;
