import { Errors } from '../../../infra/errors.js';
import { JWT_ERROR, JwtError, signJwt, verifyJwt } from '../../../infra/jwt.js';
import type { BucketName } from './file.repo.js';

export interface FileTokenPayload {
  bucketName: BucketName;
  teamId: string;
  tmbId: string;
  fileId: string;
}

/** Read links expire: 30 minutes for dataset files, 7 days for chat files (as the reference). */
export const FILE_TOKEN_TTL_SECONDS: Record<BucketName, number> = { dataset: 30 * 60, chat: 7 * 24 * 3600 };

/** An HS256 JWT signed with FILE_TOKEN_KEY, carrying the file's bucket, team, member and id. */
export function signFileToken(key: string, payload: FileTokenPayload, nowMs = Date.now()): string {
  const iat = Math.floor(nowMs / 1000);
  return signJwt({ ...payload, iat, exp: iat + FILE_TOKEN_TTL_SECONDS[payload.bucketName] }, key);
}

const refusals: Partial<Record<string, string>> = {
  [JWT_ERROR.expired]: 'The file token has expired',
  [JWT_ERROR.missingRequiredClaim]: 'The file token is incomplete',
  [JWT_ERROR.malformed]: 'The file token is malformed',
  [JWT_ERROR.invalidPayload]: 'The file token is malformed',
};

export function verifyFileToken(key: string, token: string, nowMs = Date.now()): FileTokenPayload {
  let claims: Record<string, unknown>;
  try {
    claims = verifyJwt(token, key, { nowMs, requiredClaims: ['exp'] });
  } catch (error) {
    if (error instanceof JwtError) throw Errors.unAuthFile(refusals[error.code] ?? 'The file token is not valid');
    throw error;
  }
  const { bucketName, teamId, tmbId, fileId } = claims as Partial<FileTokenPayload>;
  if (!bucketName || !teamId || !tmbId || !fileId) throw Errors.unAuthFile('The file token is incomplete');
  return { bucketName, teamId, tmbId, fileId };
}

export const fileReadUrl = (token: string, filename?: string) =>
  `/api/common/file/read?${filename ? `filename=${encodeURIComponent(filename)}&` : ''}token=${token}`;
