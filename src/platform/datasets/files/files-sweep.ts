import { groupBy } from '../../../domain/group-by.js';
import type { DatasetsContext } from '../context.js';

/** A dataset file no collection uses is removed once this old: time for the import it was uploaded for. */
export const UNUSED_FILE_GRACE_MS = 2 * 60 * 60_000;
/**
 * How far back an hourly sweep looks (the reference's window, 6 h to 2 h: each file is looked at
 * by a few sweeps). A process's first sweep looks a week back, for files the window passed while
 * no process ran.
 */
export const UNUSED_FILE_WINDOW_MS = 6 * 60 * 60_000;
export const FIRST_SWEEP_WINDOW_MS = 7 * 24 * 60 * 60_000;

/**
 * Deletes `dataset` bucket files uploaded `windowMs` to UNUSED_FILE_GRACE_MS before `now` that
 * no collection of their team uses (uploaded with common/file/upload and never imported, or left
 * by an import that failed): they count toward no limit and nothing else would remove them.
 * Returns how many went.
 */
export async function deleteUnusedDatasetFiles(ctx: DatasetsContext, now = new Date(), windowMs = UNUSED_FILE_WINDOW_MS): Promise<number> {
  const { files, collections } = ctx.repos;
  const candidates = await files.datasetFilesUploadedBetween(new Date(now.getTime() - windowMs), new Date(now.getTime() - UNUSED_FILE_GRACE_MS));
  let deleted = 0;
  for (const [teamId, group] of groupBy(candidates, (file) => file.teamId)) {
    const ids = group.map((file) => file._id);
    const used = new Set(await collections.fileIdsUsedElsewhere(teamId, ids, []));
    const unused = ids.filter((id) => !used.has(id));
    await files.deleteMany('dataset', teamId, unused);
    deleted += unused.length;
  }
  return deleted;
}
