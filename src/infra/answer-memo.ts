import type { FastifyReply } from 'fastify';

/**
 * Serialised answers of one version of a read model, by query. It lives inside that version (a
 * snapshot), so it needs no invalidation of its own: when the version stamp moves, a new snapshot
 * starts with an empty memo. Beyond `max` entries the least recently used goes; `max` 0 keeps none.
 */
export class AnswerMemo {
  private readonly texts = new Map<string, string>();

  constructor(private readonly max: number) {}

  get(key: string): string | undefined {
    const text = this.texts.get(key);
    if (text !== undefined) {
      this.texts.delete(key);
      this.texts.set(key, text);
    }
    return text;
  }

  set(key: string, text: string): void {
    if (this.max === 0) return;
    if (!this.texts.has(key) && this.texts.size >= this.max) this.texts.delete(this.texts.keys().next().value as string);
    this.texts.set(key, text);
  }
}

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

/**
 * Sends the bytes the route's own serializer writes for `wrap(value)`: computed and serialised the
 * first time the memo sees the key, then sent as they are (the same bytes, no work).
 */
export async function sendMemoised<T>(reply: FastifyReply, answer: MemoisedAnswer<T>, wrap: (value: T) => unknown = (value) => value): Promise<FastifyReply> {
  let text = answer.memo.get(answer.key);
  if (text === undefined) {
    const serialised = reply.serialize(wrap(await answer.compute()));
    text = typeof serialised === 'string' ? serialised : Buffer.from(serialised as ArrayBuffer).toString('utf8');
    answer.memo.set(answer.key, text);
  }
  return reply.type('application/json; charset=utf-8').send(text);
}
