import type { SessionsRepo } from './sessions.repo.js';
import type { UsersRepo } from './users.repo.js';

/**
 * Stores a user's new password hash and ends the user's sessions (all but `keepSessionId`).
 * Sessions end before the write as well as after it: a process stopped between the two then
 * leaves no session opened with the old password (the change did not happen, nothing of the old
 * credential survives it), and one opened with the old password meanwhile ends with the second.
 * With `expectedHash` (a change that checked the old password) the write happens only over that
 * hash: false, and nothing written, when a reset or another change landed since the check.
 */
export async function replacePassword(
  deps: { users: Pick<UsersRepo, 'setPassword'>; sessions: Pick<SessionsRepo, 'revokeAllOf'> },
  userId: string,
  passwordHash: string,
  options: { keepSessionId?: string; expectedHash?: string } = {},
): Promise<boolean> {
  await deps.sessions.revokeAllOf(userId, options.keepSessionId);
  // Not written: the write that won ends the sessions itself.
  if (!(await deps.users.setPassword(userId, passwordHash, options.expectedHash))) return false;
  await deps.sessions.revokeAllOf(userId, options.keepSessionId);
  return true;
}
