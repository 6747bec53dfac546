/**
 * Channel turns as stored jobs (channel-events.repo.ts), so that a message acknowledged to its
 * channel is answered even when the process running its turn stops (a crash, an OOM kill, a
 * deploy whose turn outlasts the shutdown budget). The delivery that claims a message runs it
 * while renewing its lease; a job whose lease lapsed is taken over by any replica's sweep, or by
 * the channel's redelivery, and run again from what was stored: the answer when the turn had
 * ended, else the turn. An attempt whose send fails ends its lease at once, so the next sweep
 * tries again; a message is given up after CHANNEL_TURN_MAX_ATTEMPTS takes, with a log line.
 * A process runs at most CHANNEL_TURNS_MAX turns at once (each holds a model call), and at most
 * CHANNEL_TURNS_PER_LINK of one link (channel-turn-gate.ts): a job past either is deferred (stored,
 * its lease ended, the take not counted) and run by the next sweep, which a turn ending here starts
 * at once while jobs wait. A sweep leaves out the links at their share, and takes the jobs of links
 * running nothing here first, so one link's backlog never holds back another link's messages.
 * A link's share holds across the deployment too (channel-link-places.ts): a turn takes one of its
 * link's places before it starts, and a job finding them all held is deferred the same way; the
 * turn giving a place back looks for a job of its link waiting, and sweeps if one does. A turn that
 * lost its place (this process stalled past it) stops and its job waits the same way.
 * A link's QPM (`limit.QPM`) counts its channel turns too, all its channel's users as one visitor
 * (they come from the channel's servers): a turn past it waits, deferred, for the next minute.
 */
import { randomUUID } from 'node:crypto';
import { startLeaseRenewal } from '../../../infra/lease-renewal.js';
import { TurnTakenOver } from '../../chat/chat-run.service.js';
import type { ChatServices } from '../../chat/chat-module.js';
import type { OutLinkDoc } from '../outlinks.repo.js';
import type { ChannelEventsRepo, ChannelJob, ChannelJobMessage } from './channel-events.repo.js';
import { createChannelLinkPlaces } from './channel-link-places.js';
import type { ChannelPlace, ChannelPlacesRepo } from './channel-places.repo.js';
import { runChannelTurn } from './channel-runner.js';
import { type ChannelTokens, channelSender } from './channel-senders.js';
import { createTimedSweep } from './channel-timed-sweep.js';
import { createChannelTurnGate } from './channel-turn-gate.js';
import type { ChannelTurns } from './channel-turns.js';

/** Takes of one message, the first delivery's included, before it is given up. */
export const CHANNEL_TURN_MAX_ATTEMPTS = 3;
/** Lapsed jobs one sweep takes over (more wait for the next sweep, or another replica's). */
const SWEEP_BATCH = 10;

export interface ChannelJobsLog {
  info(message: string): void;
  warn(message: string, error?: unknown): void;
  error(message: string, error?: unknown): void;
}

export interface ChannelJobsDeps {
  repo: ChannelEventsRepo;
  /** Each link's places across the deployment (its share). */
  places: ChannelPlacesRepo;
  chat: ChatServices;
  /** The channels' access tokens, kept between sends. */
  tokens: ChannelTokens;
  turns: ChannelTurns;
  /** The wall clock leases are judged by (every replica's). */
  now: () => number;
  /** A job's lease; its owner renews it every third of it. */
  leaseMs: number;
  /** Turns this process runs at once (CHANNEL_TURNS_MAX). */
  maxRunning: number;
  /** Turns of one link this process runs at once (CHANNEL_TURNS_PER_LINK, or its default). */
  perLink: number;
  log: ChannelJobsLog;
}

/** A message a channel delivered, as its receiver decoded it: the channel's id of it and what its turn needs. */
export interface ChannelDelivery {
  messageId: string | undefined;
  message: Omit<ChannelJobMessage, 'linkId'>;
}

/** How an attempt ended: the message is dealt with, the job is no longer this delivery's, or its turn waits until then (the link's QPM). */
type Outcome = 'ended' | 'lost' | Date;

export function createChannelJobs(deps: ChannelJobsDeps) {
  const { repo, chat, turns, log } = deps;
  const MAX = CHANNEL_TURN_MAX_ATTEMPTS;
  const now = () => new Date(deps.now());
  const leaseEnd = () => new Date(deps.now() + deps.leaseMs);
  const logTurnFailure = (error: unknown) => log.error('messaging channel turn failed', error);
  const running = createChannelTurnGate(deps.maxRunning, deps.perLink);
  const room = running.room;
  /** A job was deferred since the last sweep began (or a sweep filled its batch): another sweep may find work. */
  let jobsWaiting = false;
  /** Links at their share whose jobs may wait: one of their turns ending here starts a sweep. */
  const linksWaiting = new Set<string>();
  const places = createChannelLinkPlaces({
    repo,
    places: deps.places,
    now: deps.now,
    log,
    jobsMayWait: () => {
      jobsWaiting = true;
    },
  });
  let sweeping = false;
  /** A sweep as the minute a QPM-deferred job waits for starts. */
  const sweepAt = createTimedSweep(deps.now, () => {
    jobsWaiting = true;
    sweepWhileWaiting();
  });

  /** Sends the immediate response, then the answer (run now, or stored by an earlier attempt). */
  async function attempt(job: ChannelJob, signal: AbortSignal, holds: () => boolean): Promise<Outcome> {
    const message = job.message;
    const link = message ? await chat.outLinks.findById(message.linkId) : null;
    if (!message || !link || link.type !== message.channel) {
      log.info(`messaging channel message ${job.id} is not answered: ${message ? 'its link was deleted' : 'no message is stored with it'}`);
      return 'ended';
    }
    const send = channelSender(chat.outbound, deps.tokens, link, message);
    if (link.immediateResponse && !job.immediateSent) {
      await send(link.immediateResponse);
      if (!(await repo.record(job, { immediateSent: true }))) return 'lost';
    }
    let answer = job.answer;
    if (answer === undefined) {
      const wait = await chat.outLinks.takeChannelTurn(link);
      if (wait) return wait;
      answer = await runChannelTurn(chat, link, message, signal, logTurnFailure);
      // Stored before it is sent: an attempt after a failed send sends it without running (and
      // saving) the turn again. The write also checks that the job is still this delivery's.
      if (!holds() || !(await repo.record(job, { answer }))) return 'lost';
    }
    if (answer) {
      if (!holds()) return 'lost';
      await send(answer);
    }
    return 'ended';
  }

  /**
   * One attempt of a job this delivery holds, its lease (and its place's) renewed until the attempt
   * settles or a close stops waiting for it; the renewal in flight settles before the outcome is
   * written and the place given back (infra/lease-renewal.ts).
   */
  async function runHeld(job: ChannelJob, closed: AbortSignal, place: ChannelPlace | undefined): Promise<void> {
    const turn = new AbortController();
    let lost: 'job' | 'place' | undefined;
    const holds = () => lost === undefined && !closed.aborted;
    const stop = (what: 'job' | 'place', why: string) => {
      if (lost) return;
      lost = what;
      turn.abort(new TurnTakenOver());
      log.warn(`messaging channel message ${job.id}: ${why}; this attempt stops`);
    };
    const renewal = startLeaseRenewal(Math.max(1, Math.floor(deps.leaseMs / 3)), async () => {
      if (!holds()) return;
      const [placeHeld, jobHeld] = await Promise.all([place ? places.renew(place) : true, repo.renew(job, leaseEnd())]);
      // Taken over (this process stalled past its lease): the other delivery answers; this one stops.
      if (!jobHeld) stop('job', 'another replica took the turn over after its lease lapsed');
      // Its link's place lapsed and was taken: running on would exceed the link's share.
      else if (!placeHeld) stop('place', 'its link’s place lapsed and another turn took it');
    });
    // A close that stopped waiting leaves the job to lapse: no renewal or send from here (a done mark still is).
    const onClosed = () => void renewal.stop();
    closed.addEventListener('abort', onClosed, { once: true });
    try {
      if (closed.aborted) return;
      // Marked done even once a close stopped waiting: the answer may have gone out just before.
      const settled = await attempt(job, turn.signal, holds).then(
        (outcome) => ({ outcome }),
        (error: unknown) => ({ error }),
      );
      await renewal.stop();
      if ('outcome' in settled && settled.outcome === 'ended') {
        // Answered, or nothing to answer: a lost place does not undo that (a taken-over job is not matched).
        if (lost !== 'job') await repo.finish(job);
      } else if (lost === 'place' && job.message) {
        // Stopped for the link's share, not for a fault: the job waits, stored and its take not
        // counted, for a place of its link like any job of a full link (not for its lease to lapse).
        await places.waitForPlace(job, job.message.linkId);
      } else if ('outcome' in settled) {
        const { outcome } = settled;
        // Deferred to the next minute, the take not counted: a sweep runs it then.
        if (outcome instanceof Date && holds() && (await repo.defer(job, outcome))) {
          log.info(`messaging channel message ${job.id} waits for the next minute of its link's QPM`);
          sweepAt(outcome);
        }
      } else if (holds()) {
        if (job.attempts >= MAX) {
          log.error(`messaging channel delivery failed: message ${job.id} given up after ${job.attempts} attempts`, settled.error);
          await repo.finish(job);
        } else {
          log.warn(`messaging channel delivery failed (attempt ${job.attempts} of ${MAX}); a sweep tries again`, settled.error);
          await repo.release(job, now());
        }
      }
    } finally {
      await renewal.stop();
      closed.removeEventListener('abort', onClosed);
    }
  }

  /**
   * Runs a job this delivery holds, or defers it when this process, or its link here, runs as many
   * turns as it may. A deferral that cannot be written leaves the job stored under its live lease:
   * a sweep runs it once that lapsed, and the message's delivery is still acknowledged (stored,
   * it is answered; a 5xx only brought a redelivery that finds the job and does nothing).
   */
  async function run(job: ChannelJob, place?: ChannelPlace): Promise<void> {
    const linkId = job.message?.linkId;
    const leave = running.tryEnter(linkId);
    if (!leave) {
      if (place) await places.giveBack(place);
      // Ended a millisecond back: a sweep in this same millisecond (or under a held test clock) finds it.
      const deferred = await repo.defer(job, new Date(deps.now() - 1)).catch((error: unknown) => {
        log.warn(`messaging channel message ${job.id} could not be deferred; a sweep runs it once its lease lapsed`, error);
        return false;
      });
      // Judged after the write: a turn of the link that ended during it found nothing waiting.
      if (deferred && linkId !== undefined && !running.linkHasRoom(linkId)) linksWaiting.add(linkId);
      else if (deferred) jobsWaiting = true;
      // A turn may have ended during the write, with no one left to start the sweep.
      sweepWhileWaiting();
      return;
    }
    turns.start(async (closed) => {
      let held = place;
      try {
        if (!held && linkId !== undefined) {
          held = (await places.take(linkId)) ?? undefined;
          if (!held) return await places.waitForPlace(job, linkId);
        }
        await runHeld(job, closed, held);
      } finally {
        if (held) await places.giveBack(held);
        leave();
        if (linkId !== undefined && linksWaiting.delete(linkId)) jobsWaiting = true;
        sweepWhileWaiting();
      }
    });
  }

  /** Starts a sweep when jobs wait and a turn is free (not while one runs: it checks again when done). */
  function sweepWhileWaiting(): void {
    if (!jobsWaiting || sweeping || turns.closing || room() <= 0) return;
    sweep().catch((error) => log.warn('messaging channel sweep of deferred turns failed; the periodic sweep tries again', error));
  }

  /** One batch of lapsed jobs (deferred ones, or a stopped process's), no more than the free turns. */
  async function sweep(): Promise<void> {
    if (sweeping || turns.closing || room() <= 0) return;
    sweeping = true;
    try {
      const batchSize = Math.min(SWEEP_BATCH, room());
      jobsWaiting = false;
      // Their jobs are left out: one of their turns ending sweeps again.
      for (const linkId of running.fullLinks()) linksWaiting.add(linkId);
      const batch = await nextBatch(batchSize);
      if (batch.length === batchSize) jobsWaiting = true;
      for (const job of batch) await takeOver(job);
    } finally {
      sweeping = false;
    }
    sweepWhileWaiting();
  }

  /**
   * Up to `size` lapsed jobs, oldest lease first: those of links running no turn here, then those
   * of links below their share. A link with a long backlog and a free turn of its share does not
   * take it ahead of a link whose message waits with nothing running.
   */
  async function nextBatch(size: number): Promise<ChannelJob[]> {
    const fullEverywhere = places.fullEverywhere();
    const busy = [...new Set([...running.busyLinks(), ...fullEverywhere])];
    const idle = await repo.lapsed(now(), size, busy);
    const full = [...new Set([...running.fullLinks(), ...fullEverywhere])];
    if (idle.length === size || full.length === busy.length) return idle;
    const seen = new Set(idle.map((job) => job.id));
    const rest = await repo.lapsed(now(), size, full);
    return [...idle, ...rest.filter((job) => !seen.has(job.id))].slice(0, size);
  }

  /** Takes over a job whose lease lapsed and runs it; gives it up once its attempts are spent. */
  async function takeOver(job: ChannelJob): Promise<void> {
    // No free turn: the job stays lapsed for a later sweep (a take now would only be deferred).
    if (turns.closing || room() <= 0) return;
    if (job.attempts >= MAX) {
      if (await repo.giveUp(job, now())) log.error(`messaging channel message ${job.id} given up after ${job.attempts} attempts: the process running it stopped each time`);
      return;
    }
    // Its link runs its share here: the job stays lapsed until one of those turns ends.
    const linkId = job.message?.linkId;
    if (!running.linkHasRoom(linkId)) {
      if (linkId !== undefined) linksWaiting.add(linkId);
      return;
    }
    // A place first: a job of a link whose places are all held stays lapsed, untouched, and the
    // turn giving one back sweeps.
    let place: ChannelPlace | undefined;
    if (linkId !== undefined) {
      if (places.isFullEverywhere(linkId)) return;
      place = (await places.take(linkId)) ?? undefined;
      if (!place) {
        places.markFullEverywhere(linkId);
        return;
      }
    }
    const taken = await repo.takeOver(job, now(), leaseEnd()).catch(async (error: unknown) => {
      if (place) await places.giveBack(place);
      throw error;
    });
    // Taken by another, or a close began meanwhile (the replicas still running take it).
    if (!taken || turns.closing) {
      try {
        if (taken) await repo.release(taken, now());
      } finally {
        if (place) await places.giveBack(place);
      }
      return;
    }
    log.info(`messaging channel message ${job.id}: taken over after its lease lapsed (attempt ${taken.attempts} of ${MAX})`);
    await run(taken, place);
  }

  return {
    /**
     * A message delivered by its channel: the first delivery stores it and runs it in the
     * background; a redelivery takes it over only if its lease lapsed (a live or done job, or a
     * claim of the previous version, makes it a repeat). Resolves once the message is stored.
     */
    async deliver(link: OutLinkDoc, { messageId, message }: ChannelDelivery): Promise<void> {
      // A Feishu message's text comes out of a JSON string inside the event, where the request
      // guard does not look: no NUL is stored or reaches a chat (FerretDB cannot store one).
      const stored: ChannelJobMessage = { ...message, linkId: String(link._id), text: message.text.replaceAll('\u0000', '') };
      // A message without an id cannot be told from its repeats: it is still a job, of its own id.
      const id = `${link._id}:${messageId || `~${randomUUID()}`}`;
      const claim = await repo.claim(id, stored, now(), leaseEnd());
      if ('mine' in claim) return run(claim.mine);
      const job = claim.other;
      if (job?.state === 'running' && job.leaseUntil.getTime() < deps.now()) await takeOver(job);
    },

    /**
     * Takes over the jobs whose lease lapsed (their process stopped, or they were deferred) and
     * runs them; not while closing. Periodic: it looks at every link's places again (a stopped
     * replica's places lapse; no one gives them back).
     */
    sweep: () => {
      places.forgetFull();
      return sweep();
    },
  };
}

export type ChannelJobs = ReturnType<typeof createChannelJobs>;
