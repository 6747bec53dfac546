import { judgeUploadWindow, secondsUntilLeavingWindow } from '../../../domain/upload-window.js';
import { Errors } from '../../../infra/errors.js';
import type { AuthContext } from '../../auth/types.js';
import type { FileRepo, VisitorUploader } from './file.repo.js';

export const VISITOR_UPLOAD_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The mark of a share-page or team-space visitor's upload; undefined for members (session, API key). */
export function visitorUploaderOf(auth: AuthContext): VisitorUploader | undefined {
  return auth.authType === 'outLink' || auth.authType === 'teamDomain' ? auth.authType : undefined;
}

/**
 * The per-team bound on what share-page and team-space visitors store (chat files and images,
 * SHARE_UPLOAD_MAX_BYTES_PER_DAY over a rolling 24 hours). Visitors' ids are their own choice,
 * so the team is what is bounded: anyone with a public link could otherwise fill its storage.
 */
export function createVisitorUploadQuota(deps: { files: Pick<FileRepo, 'visitorBytesSince' | 'oldestVisitorUploadSince'>; maxBytes: number; now?: () => number }) {
  const now = deps.now ?? Date.now;
  return {
    /**
     * Refuses, before anything is stored, a visitor's upload of `size` bytes that would take the
     * team past the bound; answers the mark to store the upload with. The sum is read from what
     * is stored, so it holds across replicas; uploads checked at the same moment each see the
     * room the others are about to take, so those can pass the bound by their own sizes.
     */
    async admit(auth: AuthContext, size: number): Promise<VisitorUploader | undefined> {
      const uploader = visitorUploaderOf(auth);
      if (!uploader || deps.maxBytes === 0) return uploader;
      const since = new Date(now() - VISITOR_UPLOAD_WINDOW_MS);
      const verdict = judgeUploadWindow({ maxBytes: deps.maxBytes, size, usedBytes: await deps.files.visitorBytesSince(auth.teamId, since) });
      if (verdict === 'larger-than-bound') {
        throw Errors.payloadTooLarge(`The upload (${size} bytes) is larger than share-page and team-space visitors may store in this team in 24 hours (${deps.maxBytes} bytes)`);
      }
      // 429 with Retry-After rather than a 403: the bound is a rate over a rolling window, so the
      // same upload succeeds later, and clients already back off on 429 (the upload gate's).
      if (verdict === 'window-full') {
        const oldest = await deps.files.oldestVisitorUploadSince(auth.teamId, since);
        const retryAfter = secondsUntilLeavingWindow(oldest, VISITOR_UPLOAD_WINDOW_MS, now());
        throw Errors.tooManyRequest(`Share-page and team-space visitors have reached this team's upload quota (${deps.maxBytes} bytes in 24 hours); try again in ${retryAfter} seconds`, retryAfter);
      }
      return uploader;
    },
  };
}
