import type { SessionsRepo } from './sessions.repo.js';
import type { UsersRepo } from './users.repo.js';

/**
 * Stores a user's new password hash and ends the user's sessions (all but `keepSessionId`).
 * Sessions end before the write as well as after it: a process stopped between the two then
 * leaves no session opened with the old password (the change did not happen, nothing of the old
 * credential survives it), and one opened with the old password meanwhile ends with the second.
 */
export async function replacePassword(
  deps: { users: Pick<UsersRepo, 'setPassword'>; sessions: Pick<SessionsRepo, 'revokeAllOf'> },
  userId: string,
  passwordHash: string,
  keepSessionId?: string,
): Promise<void> {
  await deps.sessions.revokeAllOf(userId, keepSessionId);
  await deps.users.setPassword(userId, passwordHash);
  await deps.sessions.revokeAllOf(userId, keepSessionId);
}
