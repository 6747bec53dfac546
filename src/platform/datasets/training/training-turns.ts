/**
 * Whose turn it is to have queued training items claimed, per process: the teams the queue's
 * counts show with queued items (sorted; read every QUEUED_TEAMS_TTL_MS, and again at the next
 * claim when a team they lack queues items here or is met at the head of the queue), less those
 * found with nothing claimable since the last full read, starting after the team the last claim
 * took items of. One team's large import no longer holds every other team back until it is
 * trained. A hint only: when the counts cannot be read, claims take the queue in order.
 */
export const QUEUED_TEAMS_TTL_MS = 15_000;

export function createTrainingTurns(deps: { queuedTeams: () => Promise<string[]>; onError: (error: unknown) => void; now?: () => number }) {
  const now = deps.now ?? (() => Date.now());
  let teams: string[] = [];
  let readAt = Number.NEGATIVE_INFINITY;
  let reread = false;
  /** Found with nothing claimable since the last full read: skipped until then. */
  const dry = new Set<string>();
  /** Met at the head of the queue but not in the counts: not read again for them. */
  const unlisted = new Set<string>();
  let last = '';

  return {
    /** Items of these teams were queued by this process. */
    queuedBy(teamIds: Iterable<string>): void {
      for (const team of teamIds) {
        dry.delete(team);
        if (!teams.includes(team)) reread = true;
      }
    },
    /** Items of these teams were found at the head of the queue. */
    metAtHead(teamIds: Iterable<string>): void {
      for (const team of teamIds) {
        if (teams.includes(team) || unlisted.has(team)) continue;
        unlisted.add(team);
        reread = true;
      }
    },
    /** A claim read this team's queued items: none (skip it for now), or some (the next claim starts after it). */
    claimedFrom(team: string, found: number): void {
      if (found === 0) dry.add(team);
      else last = team;
    },
    /** The teams with queued items, from the one after the last team a claim took items of. */
    async inTurn(): Promise<string[]> {
      const clock = now();
      const expired = clock - readAt >= QUEUED_TEAMS_TTL_MS || clock < readAt;
      if (expired || reread) {
        reread = false;
        teams = await deps.queuedTeams().catch((error: unknown) => {
          deps.onError(error);
          return [];
        });
        if (expired) {
          readAt = clock;
          dry.clear();
          unlisted.clear();
        }
      }
      const live = teams.filter((team) => !dry.has(team));
      const next = live.findIndex((team) => team > last);
      return next <= 0 ? live : [...live.slice(next), ...live.slice(0, next)];
    },
  };
}
