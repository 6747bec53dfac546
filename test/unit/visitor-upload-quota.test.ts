import { describe, expect, it } from 'vitest';
import { judgeUploadWindow, secondsUntilLeavingWindow, type UploadWindowVerdict } from '../../src/domain/upload-window.js';
import { isAppError } from '../../src/infra/errors.js';
import type { AuthContext, AuthType } from '../../src/platform/auth/types.js';
import { createVisitorUploadQuota, VISITOR_UPLOAD_WINDOW_MS } from '../../src/platform/datasets/files/visitor-upload-quota.js';

const DAY = 24 * 60 * 60 * 1000;

describe('judgeUploadWindow', () => {
  it.each<[string, { maxBytes: number; size: number; usedBytes: number }, UploadWindowVerdict]>([
    ['an empty window', { maxBytes: 100, size: 10, usedBytes: 0 }, 'fits'],
    ['filling the bound exactly', { maxBytes: 100, size: 40, usedBytes: 60 }, 'fits'],
    ['one byte past it', { maxBytes: 100, size: 41, usedBytes: 60 }, 'window-full'],
    ['a window already past it (racing uploads)', { maxBytes: 100, size: 1, usedBytes: 130 }, 'window-full'],
    ['the whole bound in one upload', { maxBytes: 100, size: 100, usedBytes: 0 }, 'fits'],
    ['more than the whole bound, even in an empty window', { maxBytes: 100, size: 101, usedBytes: 0 }, 'larger-than-bound'],
  ])('%s', (_name, input, expected) => {
    expect(judgeUploadWindow(input)).toBe(expected);
  });
});

describe('secondsUntilLeavingWindow', () => {
  const now = Date.UTC(2024, 0, 2);
  it.each<[string, Date | null, number]>([
    ['an upload of just now: the whole window', new Date(now), DAY / 1000],
    ['an upload of 23 hours ago: one hour', new Date(now - 23 * 3600_000), 3600],
    ['part of a second is a whole second', new Date(now - DAY + 1), 1],
    ['never less than one second', new Date(now - DAY - 5000), 1],
    ['no upload found (deleted meanwhile): the whole window', null, DAY / 1000],
  ])('%s', (_name, oldest, expected) => {
    expect(secondsUntilLeavingWindow(oldest, DAY, now)).toBe(expected);
  });
});

describe('createVisitorUploadQuota', () => {
  const now = Date.UTC(2024, 0, 2, 12);
  const auth = (authType: AuthType) => ({ authType, teamId: 'team-1' }) as AuthContext;

  function quota(maxBytes: number, usedBytes: number) {
    const reads: string[] = [];
    const files = {
      visitorBytesSince: async (teamId: string, since: Date) => {
        reads.push(`bytes ${teamId} ${now - since.getTime()}`);
        return usedBytes;
      },
      oldestVisitorUploadSince: async (teamId: string) => {
        reads.push(`oldest ${teamId}`);
        return new Date(now - 20 * 3600_000);
      },
    };
    return { quota: createVisitorUploadQuota({ files, maxBytes, now: () => now }), reads };
  }

  it('marks share-page and team-space uploads and reads the team’s last 24 hours', async () => {
    const { quota: q, reads } = quota(100, 50);
    expect(await q.admit(auth('outLink'), 50)).toBe('outLink');
    expect(await q.admit(auth('teamDomain'), 10)).toBe('teamDomain');
    expect(reads).toEqual([`bytes team-1 ${VISITOR_UPLOAD_WINDOW_MS}`, `bytes team-1 ${VISITOR_UPLOAD_WINDOW_MS}`]);
  });

  it.each<AuthType>(['token', 'apikey', 'root'])('neither bounds nor marks a member (%s), and reads nothing', async (authType) => {
    const { quota: q, reads } = quota(100, 1000);
    expect(await q.admit(auth(authType), 500)).toBeUndefined();
    expect(reads).toEqual([]);
  });

  it('with a bound of 0, marks visitors and reads nothing', async () => {
    const { quota: q, reads } = quota(0, 10 ** 12);
    expect(await q.admit(auth('outLink'), 10 ** 9)).toBe('outLink');
    expect(reads).toEqual([]);
  });

  it('refuses a full window with 429 and a Retry-After of when the oldest upload leaves it', async () => {
    const { quota: q, reads } = quota(100, 90);
    const error = await q.admit(auth('outLink'), 11).catch((e: unknown) => e);
    if (!isAppError(error)) throw error;
    expect(error).toMatchObject({ httpStatus: 429, statusText: 'tooManyRequest', headers: { 'retry-after': String(4 * 3600) } });
    expect(error.message).toBe("Share-page and team-space visitors have reached this team's upload quota (100 bytes in 24 hours); try again in 14400 seconds");
    expect(reads).toEqual([`bytes team-1 ${VISITOR_UPLOAD_WINDOW_MS}`, 'oldest team-1']);
  });

  it('refuses an upload larger than the whole bound with 413 (no Retry-After: waiting does not help)', async () => {
    const { quota: q } = quota(100, 0);
    const error = await q.admit(auth('teamDomain'), 101).catch((e: unknown) => e);
    if (!isAppError(error)) throw error;
    expect(error).toMatchObject({ httpStatus: 413, headers: undefined });
  });
});
