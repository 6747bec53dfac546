/**
 * Channel turns as stored jobs (channel-events.repo.ts), so that a message acknowledged to its
 * channel is answered even when the process running its turn stops (a crash, an OOM kill, a
 * deploy whose turn outlasts the shutdown budget). The delivery that claims a message runs it
 * while renewing its lease; a job whose lease lapsed is taken over by any replica's sweep, or by
 * the channel's redelivery, and run again from what was stored: the answer when the turn had
 * ended, else the turn. An attempt whose send fails ends its lease at once, so the next sweep
 * tries again; a message is given up after CHANNEL_TURN_MAX_ATTEMPTS takes, with a log line.
 * A process runs at most CHANNEL_TURNS_MAX turns at once (each holds a model call): a job past it
 * is deferred (stored, its lease ended, the take not counted) and run by the next sweep, which a
 * turn ending here starts at once while jobs wait.
 */
import { randomUUID } from 'node:crypto';
import { createConcurrencyGate } from '../../../infra/concurrency-gate.js';
import { startLeaseRenewal } from '../../../infra/lease-renewal.js';
import { TurnTakenOver } from '../../chat/chat-run.service.js';
import type { ChatServices } from '../../chat/chat-module.js';
import type { OutLinkDoc } from '../outlinks.repo.js';
import type { ChannelEventsRepo, ChannelJob, ChannelJobMessage } from './channel-events.repo.js';
import { runChannelTurn } from './channel-runner.js';
import { channelSender } from './channel-senders.js';
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
  chat: ChatServices;
  turns: ChannelTurns;
  /** The wall clock leases are judged by (every replica's). */
  now: () => number;
  /** A job's lease; its owner renews it every third of it. */
  leaseMs: number;
  /** Turns this process runs at once (CHANNEL_TURNS_MAX). */
  maxRunning: number;
  log: ChannelJobsLog;
}

/** A message a channel delivered, as its receiver decoded it: the channel's id of it and what its turn needs. */
export interface ChannelDelivery {
  messageId: string | undefined;
  message: Omit<ChannelJobMessage, 'linkId'>;
}

/** How an attempt ended: the message is dealt with, or the job is no longer this delivery's. */
type Outcome = 'ended' | 'lost';

export function createChannelJobs(deps: ChannelJobsDeps) {
  const { repo, chat, turns, log } = deps;
  const MAX = CHANNEL_TURN_MAX_ATTEMPTS;
  const now = () => new Date(deps.now());
  const leaseEnd = () => new Date(deps.now() + deps.leaseMs);
  const logTurnFailure = (error: unknown) => log.error('messaging channel turn failed', error);
  const running = createConcurrencyGate(deps.maxRunning);
  const room = () => deps.maxRunning - running.held;
  /** A job was deferred since the last sweep began (or a sweep filled its batch): another sweep may find work. */
  let jobsWaiting = false;
  let sweeping = false;

  /** Sends the immediate response, then the answer (run now, or stored by an earlier attempt). */
  async function attempt(job: ChannelJob, signal: AbortSignal, holds: () => boolean): Promise<Outcome> {
    const message = job.message;
    const link = message ? await chat.outLinks.findById(message.linkId) : null;
    if (!message || !link || link.type !== message.channel) {
      log.info(`messaging channel message ${job.id} is not answered: ${message ? 'its link was deleted' : 'no message is stored with it'}`);
      return 'ended';
    }
    const send = channelSender(chat.outbound, link, message);
    if (link.immediateResponse && !job.immediateSent) {
      await send(link.immediateResponse);
      if (!(await repo.record(job, { immediateSent: true }))) return 'lost';
    }
    let answer = job.answer;
    if (answer === undefined) {
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

  /** One attempt of a job this delivery holds, its lease renewed until it ends or a close stops waiting for it. */
  async function runHeld(job: ChannelJob, closed: AbortSignal): Promise<void> {
    const turn = new AbortController();
    let lost = false;
    const holds = () => !lost && !closed.aborted;
    const renewal = startLeaseRenewal(Math.max(1, Math.floor(deps.leaseMs / 3)), async () => {
      if (!holds() || (await repo.renew(job, leaseEnd()))) return;
      // Taken over (this process stalled past its lease): the other delivery answers; this one stops.
      lost = true;
      turn.abort(new TurnTakenOver());
      log.warn(`messaging channel message ${job.id}: another replica took the turn over after its lease lapsed; this attempt stops`);
    });
    // A close that stopped waiting leaves the job to lapse: no renewal or send from here (a done mark still is).
    const stopRenewing = () => renewal.stop();
    closed.addEventListener('abort', stopRenewing, { once: true });
    try {
      if (closed.aborted) return;
      // Marked done even once a close stopped waiting: the answer may have gone out just before.
      if ((await attempt(job, turn.signal, holds)) === 'ended' && !lost) await repo.finish(job);
    } catch (error) {
      if (!holds()) return;
      if (job.attempts >= MAX) {
        log.error(`messaging channel delivery failed: message ${job.id} given up after ${job.attempts} attempts`, error);
        await repo.finish(job);
      } else {
        log.warn(`messaging channel delivery failed (attempt ${job.attempts} of ${MAX}); a sweep tries again`, error);
        await repo.release(job, now());
      }
    } finally {
      renewal.stop();
      closed.removeEventListener('abort', stopRenewing);
    }
  }

  /** Runs a job this delivery holds, or defers it when this process runs as many turns as it may. */
  async function run(job: ChannelJob): Promise<void> {
    const leave = running.tryEnter();
    if (!leave) {
      // Ended a millisecond back: a sweep in this same millisecond (or under a held test clock) finds it.
      if (await repo.defer(job, new Date(deps.now() - 1))) jobsWaiting = true;
      // A turn may have ended during the write, with no one left to start the sweep.
      sweepWhileWaiting();
      return;
    }
    turns.start(async (closed) => {
      try {
        await runHeld(job, closed);
      } finally {
        leave();
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
      const batch = await repo.lapsed(now(), batchSize);
      if (batch.length === batchSize) jobsWaiting = true;
      for (const job of batch) await takeOver(job);
    } finally {
      sweeping = false;
    }
    sweepWhileWaiting();
  }

  /** Takes over a job whose lease lapsed and runs it; gives it up once its attempts are spent. */
  async function takeOver(job: ChannelJob): Promise<void> {
    // No free turn: the job stays lapsed for a later sweep (a take now would only be deferred).
    if (turns.closing || room() <= 0) return;
    if (job.attempts >= MAX) {
      if (await repo.giveUp(job, now())) log.error(`messaging channel message ${job.id} given up after ${job.attempts} attempts: the process running it stopped each time`);
      return;
    }
    const taken = await repo.takeOver(job, now(), leaseEnd());
    if (!taken) return;
    // A close that began meanwhile leaves it to the replicas still running.
    if (turns.closing) {
      await repo.release(taken, now());
      return;
    }
    log.info(`messaging channel message ${job.id}: taken over after its lease lapsed (attempt ${taken.attempts} of ${MAX})`);
    await run(taken);
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

    /** Takes over the jobs whose lease lapsed (their process stopped, or they were deferred) and runs them; not while closing. */
    sweep,
  };
}

export type ChannelJobs = ReturnType<typeof createChannelJobs>;
