import { Errors } from '../../../infra/errors.js';

/**
 * Links of one team read at once, across its requests. Each page but a tiny one is converted in a
 * worker task, and a team holds only a few waiting places there (worker-task.ts): two 20-link
 * requests reading 4 links each overflowed them, and every link past them came back empty.
 */
export const LINK_READS_PER_TEAM = 4;
/** Requests of one team waiting for their turn; one more is refused at once (429). */
export const LINK_REQUESTS_WAITING_PER_TEAM = 4;
/** How long a request may wait for its turn before it is refused (429) without having read a link. */
export const LINK_TURN_WAIT_MS = 60_000;
/** Retry-After of a refused request, in seconds. */
const RETRY_AFTER_SECONDS = 5;

interface WaitingRequest {
  width: number;
  start: () => void;
}

interface TeamTurns {
  /** Link reads running now. */
  reading: number;
  /** Requests waiting, first come first served: a wide one is not passed over by narrow ones. */
  waiting: WaitingRequest[];
}

/**
 * A team's link reads, shared by every request that reads links (urlFetch, link previews, link
 * collections and their sync). A request is admitted as a whole, with the reads it may run at once
 * (`width`, at most LINK_READS_PER_TEAM), once the team has that many free; it then reads its links
 * without asking again. A request that cannot be admitted (too many of the team's requests wait, or
 * its turn does not come within `maxWaitMs`) is refused before it reads any link.
 */
export function createLinkReadTurns(limits: { perTeam?: number; waitingPerTeam?: number; maxWaitMs?: number } = {}) {
  const perTeam = limits.perTeam ?? LINK_READS_PER_TEAM;
  const waitingPerTeam = limits.waitingPerTeam ?? LINK_REQUESTS_WAITING_PER_TEAM;
  const maxWaitMs = limits.maxWaitMs ?? LINK_TURN_WAIT_MS;
  const teams = new Map<string, TeamTurns>();

  function startWaiting(team: TeamTurns): void {
    for (let next = team.waiting[0]; next && team.reading + next.width <= perTeam; next = team.waiting[0]) {
      team.waiting.shift();
      team.reading += next.width;
      next.start();
    }
  }

  async function admit(teamId: string, width: number, signal: AbortSignal | undefined): Promise<TeamTurns> {
    signal?.throwIfAborted();
    let team = teams.get(teamId);
    if (!team) {
      team = { reading: 0, waiting: [] };
      teams.set(teamId, team);
    }
    if (team.waiting.length === 0 && team.reading + width <= perTeam) {
      team.reading += width;
      return team;
    }
    if (team.waiting.length >= waitingPerTeam) {
      throw Errors.tooManyRequest("Too many of this team's link reads are waiting; retry shortly", RETRY_AFTER_SECONDS);
    }
    const waiting = team;
    await new Promise<void>((resolve, reject) => {
      /** Leaves the queue without reading (its time ran out, or its client went away). */
      const leave = (reason: unknown) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        waiting.waiting.splice(waiting.waiting.indexOf(request), 1);
        // The head left: the requests behind it may fit now.
        startWaiting(waiting);
        forgetIfIdle(teamId, waiting);
        reject(reason);
      };
      const onAbort = () => leave(signal?.reason);
      const request: WaitingRequest = {
        width,
        start: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const timer = setTimeout(
        () => leave(Errors.tooManyRequest(`This team's earlier link reads did not finish within ${maxWaitMs / 1000} s; retry shortly`, RETRY_AFTER_SECONDS)),
        maxWaitMs,
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      waiting.waiting.push(request);
    });
    return waiting;
  }

  function forgetIfIdle(teamId: string, team: TeamTurns): void {
    if (team.reading === 0 && team.waiting.length === 0 && teams.get(teamId) === team) teams.delete(teamId);
  }

  /**
   * Runs `read` once the team may read `links` links, up to `width` of them at once (`width` is
   * what `read` receives and must keep to). A request whose `signal` aborts while it waits leaves
   * the queue (rejected with the signal's reason), making room for the next.
   */
  async function inTurn<T>(teamId: string, links: number, read: (width: number) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const width = Math.max(1, Math.min(perTeam, links));
    const team = await admit(teamId, width, signal);
    try {
      return await read(width);
    } finally {
      team.reading -= width;
      startWaiting(team);
      forgetIfIdle(teamId, team);
    }
  }

  /** Link reads running and requests waiting of a team (tests). */
  function load(teamId: string): { reading: number; waiting: number } {
    const team = teams.get(teamId);
    return { reading: team?.reading ?? 0, waiting: team?.waiting.length ?? 0 };
  }

  return { inTurn, load };
}

export type LinkReadTurns = ReturnType<typeof createLinkReadTurns>;
