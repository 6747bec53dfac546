import type { FastifyReply, FastifyRequest } from 'fastify';
import { LruMap } from './lru-map.js';

/**
 * Serialised answers of one version of a read model, by query, as the UTF-8 bytes sent (a string
 * would be measured and encoded again on every send). It lives inside that version (a snapshot),
 * so it needs no invalidation of its own: when the version stamp moves, a new snapshot starts with
 * an empty memo. Beyond `max` entries (or, with a weight bound, bytes: `weigh` by `length`) the
 * least recently used goes; `max` 0 keeps none.
 */
export class AnswerMemo extends LruMap<Buffer> {}

/** What a handler answers when its answer may be memoised: the memo, the query's key, how to compute it. */
export class MemoisedAnswer<T = unknown> {
  constructor(
    readonly memo: AnswerMemo,
    readonly key: string,
    readonly compute: () => T | Promise<T>,
  ) {}
}

/** A memo that keeps nothing, for answers computed afresh every time. */
export const NO_MEMO = new AnswerMemo(0);

/** Answers being sent for the first time, whose bytes `keepSentAnswer` stores in their memo. */
const firstSends = new WeakMap<FastifyRequest, MemoisedAnswer<unknown>>();

/**
 * Sends `wrap(value)` the first time the memo sees the key, through the route's usual path
 * (hooks, compiled serializer), and keeps the bytes written (`keepSentAnswer`, an onSend hook
 * registered by plugins/answer-memo.ts); later sends are those bytes as they are, no work.
 */
export async function sendMemoised<T>(reply: FastifyReply, answer: MemoisedAnswer<T>, wrap: (value: T) => unknown = (value) => value): Promise<FastifyReply> {
  const bytes = answer.memo.get(answer.key);
  if (bytes !== undefined) return reply.type('application/json; charset=utf-8').send(bytes);
  const value = wrap(await answer.compute());
  firstSends.set(reply.request, answer as MemoisedAnswer<unknown>);
  return reply.send(value);
}

/** onSend: keeps the serialised bytes of a first send in its memo (a successful reply only). */
export function keepSentAnswer(request: FastifyRequest, reply: FastifyReply, payload: unknown): void {
  const answer = firstSends.get(request);
  if (!answer) return;
  firstSends.delete(request);
  if (reply.statusCode === 200 && typeof payload === 'string') answer.memo.set(answer.key, Buffer.from(payload));
}
