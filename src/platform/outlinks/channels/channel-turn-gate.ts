/**
 * The turns a process runs at once: at most `maxRunning` in all (CHANNEL_TURNS_MAX) and at most
 * `perLink` of one link (its fair share), so one link's burst, or one leaked check secret, cannot
 * take every turn and make the other teams' links wait. Without queueing, as concurrency-gate.ts:
 * a caller that finds no room defers its job (channel-jobs.ts).
 */
import { createConcurrencyGate } from '../../../infra/concurrency-gate.js';

/**
 * A link's share when CHANNEL_TURNS_PER_LINK is unset: a quarter of the process's turns, at least
 * one. Four busy links can run side by side, one busy link still runs several turns at once, and
 * three quarters of the turns stay for the others; never more than the process runs.
 */
export function channelTurnsPerLink(maxRunning: number, configured: number | undefined): number {
  return Math.min(maxRunning, configured ?? Math.max(1, Math.floor(maxRunning / 4)));
}

export function createChannelTurnGate(maxRunning: number, perLink: number) {
  const all = createConcurrencyGate(maxRunning);
  /** Turns running per link id (absent: none). */
  const byLink = new Map<string, number>();
  const runningOf = (linkId: string) => byLink.get(linkId) ?? 0;

  return {
    /** A release function (idempotent), or null when the process or the link runs as many turns as it may. */
    tryEnter(linkId: string | undefined): (() => void) | null {
      if (linkId !== undefined && runningOf(linkId) >= perLink) return null;
      const leave = all.tryEnter();
      if (!leave || linkId === undefined) return leave;
      byLink.set(linkId, runningOf(linkId) + 1);
      let left = false;
      return () => {
        if (left) return;
        left = true;
        leave();
        const rest = runningOf(linkId) - 1;
        if (rest > 0) byLink.set(linkId, rest);
        else byLink.delete(linkId);
      };
    },
    /** Turns free in the process. */
    room: () => maxRunning - all.held,
    /** Whether a turn of this link (a job without a message has none) may start as far as its share goes. */
    linkHasRoom: (linkId: string | undefined) => linkId === undefined || runningOf(linkId) < perLink,
    /** Links running at least one turn here. */
    busyLinks: () => [...byLink.keys()],
    /** Links running their whole share here: their waiting jobs are left for later. */
    fullLinks: () => [...byLink].filter(([, running]) => running >= perLink).map(([linkId]) => linkId),
  };
}

export type ChannelTurnGate = ReturnType<typeof createChannelTurnGate>;
