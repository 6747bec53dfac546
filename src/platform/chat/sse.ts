/**
 * Server-sent events in the reference's shape: with detail every frame is named,
 * without detail only answer text goes out as unnamed OpenAI chunks (errors keep their name).
 */
import type { FastifyReply } from 'fastify';
import type { WorkflowEvent } from '../../domain/workflow/types.js';

/** An OpenAI chunk; `created` (unix seconds) is the answer's start, the same on each of its chunks. */
export function textChunk(text: string, finish: boolean, created: number) {
  return {
    id: '',
    object: 'chat.completion.chunk',
    created,
    model: '',
    choices: [{ delta: finish ? {} : { role: 'assistant', content: text }, index: 0, finish_reason: finish ? 'stop' : null }],
  };
}

/**
 * OpenAI's usage chunk (`stream_options.include_usage`), the last before `[DONE]`: no choices,
 * the whole turn's model tokens.
 */
export function usageChunk(tokens: { inputTokens: number; outputTokens: number }, created: number) {
  const usage = { prompt_tokens: tokens.inputTokens, completion_tokens: tokens.outputTokens, total_tokens: tokens.inputTokens + tokens.outputTokens };
  return { id: '', object: 'chat.completion.chunk', created, model: '', choices: [], usage };
}

export class SseWriter {
  private started = false;
  constructor(
    private readonly reply: FastifyReply,
    private readonly detail: boolean,
    private readonly created: number,
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
    this.reply.raw.write(`${event && (this.detail || event === 'error') ? `event: ${event}\n` : ''}data: ${payload}\n\n`);
  }

  /** Forwards a workflow event; without detail only answer text is written. */
  emit(event: WorkflowEvent): void {
    if (event.event === 'answer' || event.event === 'fastAnswer') {
      this.write(event.event, textChunk(event.text, false, this.created));
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
    if (!this.closed) this.reply.raw.end();
  }
}
