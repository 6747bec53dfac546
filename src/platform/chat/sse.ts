/**
 * Server-sent events in the reference's shape: with detail every frame is named,
 * without detail only answer text goes out as unnamed OpenAI chunks (errors keep their name).
 */
import type { FastifyReply } from 'fastify';
import type { WorkflowEvent } from '../../domain/workflow/types.js';

/**
 * What every chunk of one streamed answer carries: its id and start (unix seconds). The id is
 * never empty: openai v6's stream helper takes a later chunk's fields (the usage) only from
 * chunks with an id (the reference sends `''`, and no usage chunk).
 */
export interface CompletionStamp {
  id: string;
  created: number;
}

/** What a chunk of the answer is: its opening (the role, said once), a piece of its text, or its end. */
export type ChunkKind = 'open' | 'text' | 'finish';

/**
 * An OpenAI chunk of the answer `stamp` names. Only the opening chunk names the role, as OpenAI
 * streams: openai-python's stream helper joins every string field of the deltas it is sent, so a
 * role in each chunk made the final message's role `assistantassistant…` (the reference repeats it).
 */
export function textChunk(text: string, kind: ChunkKind, stamp: CompletionStamp) {
  const delta = kind === 'finish' ? {} : kind === 'open' ? { role: 'assistant', content: text } : { content: text };
  return {
    id: stamp.id,
    object: 'chat.completion.chunk',
    created: stamp.created,
    model: '',
    choices: [{ delta, index: 0, finish_reason: kind === 'finish' ? 'stop' : null }],
  };
}

/**
 * OpenAI's usage chunk (`stream_options.include_usage`), the last before `[DONE]`: no choices,
 * the whole turn's model tokens.
 */
export function usageChunk(tokens: { inputTokens: number; outputTokens: number }, stamp: CompletionStamp) {
  const usage = { prompt_tokens: tokens.inputTokens, completion_tokens: tokens.outputTokens, total_tokens: tokens.inputTokens + tokens.outputTokens };
  return { id: stamp.id, object: 'chat.completion.chunk', created: stamp.created, model: '', choices: [], usage };
}

/** Frames go out in pieces of this size: a client reading a large frame slowly is seen to read it. */
const WRITE_PIECE_BYTES = 64 * 1024;

/**
 * Writes one turn's frames. A client that stops reading leaves them in this process's memory:
 * the turn waits for it between nodes (`drained`), and once written frames wait longer than
 * `stallTimeoutMs` for it the connection is closed, which ends the turn (its abort signal).
 */
export class SseWriter {
  private started = false;
  private stallTimer: NodeJS.Timeout | undefined;
  /** Bytes of frames handed to the response. */
  private written = 0;
  constructor(
    private readonly reply: FastifyReply,
    private readonly detail: boolean,
    private readonly stamp: CompletionStamp,
    private readonly stallTimeoutMs: number,
  ) {}

  get closed(): boolean {
    return this.reply.raw.destroyed || this.reply.raw.writableEnded;
  }

  start(status = 200): void {
    if (this.started) return;
    this.started = true;
    // Headers set by hooks so far (CORS, security headers) would be lost by the hijack: keep them.
    const fromHooks = Object.fromEntries(Object.entries(this.reply.getHeaders()).filter(([, value]) => value !== undefined)) as Record<string, string | number | string[]>;
    this.reply.hijack();
    this.reply.raw.writeHead(status, {
      'access-control-allow-origin': '*',
      ...fromHooks,
      'content-type': 'text/event-stream;charset=utf-8',
      'x-accel-buffering': 'no',
      'cache-control': 'no-cache, no-transform',
      'x-request-id': String(this.reply.request.id),
    });
  }

  write(event: string | undefined, data: unknown): void {
    this.start();
    if (this.closed) return;
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    const text = `${event && (this.detail || event === 'error') ? `event: ${event}\n` : ''}data: ${payload}\n\n`;
    let flowing: boolean;
    // Three bytes at most a UTF-16 unit: a frame this short is one piece as it is.
    if (text.length <= WRITE_PIECE_BYTES / 3) {
      this.written += Buffer.byteLength(text);
      flowing = this.reply.raw.write(text);
    } else {
      const frame = Buffer.from(text);
      this.written += frame.length;
      flowing = true;
      for (let at = 0; at < frame.length; at += WRITE_PIECE_BYTES) flowing = this.reply.raw.write(frame.subarray(at, at + WRITE_PIECE_BYTES));
    }
    if (!flowing) this.watchStall();
  }

  /** Resolves once the frames written so far left for the client, or the connection closed. */
  drained(): Promise<void> {
    const raw = this.reply.raw;
    if (this.closed || !raw.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        raw.off('drain', done);
        raw.off('close', done);
        resolve();
      };
      raw.on('drain', done);
      raw.on('close', done);
    });
  }

  /** Bytes of frames that left this process: those written less those still waiting in its buffers. */
  private sentBytes(): number {
    return this.written - this.reply.raw.writableLength;
  }

  /**
   * Closes the connection once the frames waiting for the client stop leaving: checked every
   * stall timeout until they are all gone (a slow client that still reads is left alone).
   */
  private watchStall(): void {
    if (this.stallTimer) return;
    const raw = this.reply.raw;
    const events = ['drain', 'finish', 'close'] as const;
    const clear = () => {
      clearTimeout(this.stallTimer);
      this.stallTimer = undefined;
      for (const event of events) raw.off(event, clear);
    };
    let sent = this.sentBytes();
    const check = () => {
      if (this.sentBytes() > sent) {
        sent = this.sentBytes();
        this.stallTimer = setTimeout(check, this.stallTimeoutMs);
        return;
      }
      clear();
      raw.destroy();
    };
    this.stallTimer = setTimeout(check, this.stallTimeoutMs);
    for (const event of events) raw.on(event, clear);
  }

  /** Forwards a workflow event; without detail only answer text is written. */
  emit(event: WorkflowEvent): void {
    if (event.event === 'answer' || event.event === 'fastAnswer') {
      this.write(event.event, textChunk(event.text, 'text', this.stamp));
      return;
    }
    if (!this.detail) return;
    if (event.event === 'flowNodeStatus') this.write(event.event, { status: event.status, name: event.name });
    else if (event.event === 'updateVariables') this.write(event.event, event.variables);
    else if (event.event === 'interactive') this.write(event.event, { interactive: event.interactive });
    else if ('tool' in event) this.write(event.event, { tool: event.tool });
  }

  end(): void {
    this.start();
    if (this.closed) return;
    this.reply.raw.end();
    // The last frames (the run details) may be the largest: they too wait only so long.
    if (!this.reply.raw.writableFinished) this.watchStall();
  }
}
