/**
 * One streamed model call of the tools node: the answer's text is handed on as it arrives and
 * the tool calls are assembled from their fragments, as the reference streams a tool-calling
 * round (`answer` tokens, a `toolCall` when a call starts, `toolParams` for its argument pieces).
 * The plain streamChat helper reads text only.
 */
import { reportedTokens } from '../../../domain/token-count.js';
import { cutBy, type LlmEndpoint, type LlmRequest, type LlmResult, type LlmToolCall, postStreamingChat, readSseData } from '../../../infra/llm-stream.js';

export interface ToolRoundHandlers {
  onText: (text: string) => void;
  /** A call starts (its id and function name known; `arguments` holds what came with them). */
  onToolCall: (call: LlmToolCall) => void;
  /** A further piece of the arguments of a started call. */
  onToolParams: (call: LlmToolCall, fragment: string) => void;
}

interface ToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string | null; arguments?: string | null };
}

/** A streamed chunk's delta, or (a provider that does not stream) the completion's message. */
interface ChoicePart {
  content?: unknown;
  tool_calls?: unknown;
}

interface StreamChunk {
  choices?: { delta?: ChoicePart; message?: ChoicePart }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

/** A call of a streamed round, built up from its fragments (keyed by the index the provider gives it). */
class CallAssembler {
  readonly calls: LlmToolCall[] = [];
  private readonly byIndex = new Map<number, LlmToolCall>();
  private readonly announced = new Set<LlmToolCall>();

  constructor(private readonly handlers: ToolRoundHandlers) {}

  add(delta: ToolCallDelta, position: number): void {
    const index = typeof delta.index === 'number' ? delta.index : position;
    let call = this.byIndex.get(index);
    // Another id at the same place: a new call (from a provider that gives no indexes).
    if (call && delta.id && call.id && delta.id !== call.id) call = undefined;
    const name = typeof delta.function?.name === 'string' ? delta.function.name : '';
    const fragment = typeof delta.function?.arguments === 'string' ? delta.function.arguments : '';
    if (!call) {
      // A piece of no call that has started (no id, no name): nothing to add it to.
      if (!delta.id && !name) return;
      call = { id: delta.id ?? '', type: 'function', function: { name, arguments: fragment } };
      this.byIndex.set(index, call);
      this.calls.push(call);
    } else {
      if (delta.id && !call.id) call.id = delta.id;
      call.function.name += name;
      call.function.arguments += fragment;
    }
    if (!this.announced.has(call)) {
      if (call.id && call.function.name) {
        this.announced.add(call);
        this.handlers.onToolCall(call);
      }
    } else if (fragment) this.handlers.onToolParams(call, fragment);
  }

  /** Calls the stream ended without announcing (no id given): announced now, with an id of their own. */
  finish(newId: () => string): LlmToolCall[] {
    const named = this.calls.filter((call) => call.function.name);
    for (const call of named) {
      if (this.announced.has(call)) continue;
      call.id ||= newId();
      this.handlers.onToolCall(call);
    }
    return named;
  }
}

/**
 * A streamed completion with tools; a provider answering the streamed request with one JSON
 * completion is read as such. Cut by `signal` (the client hung up), it answers the text so far,
 * marked `cut`, and no calls: their arguments may be incomplete, and nothing is left to run them for.
 */
export async function streamToolRound(endpoint: LlmEndpoint, request: LlmRequest, handlers: ToolRoundHandlers, newId: () => string, signal?: AbortSignal): Promise<LlmResult> {
  const assembler = new CallAssembler(handlers);
  let content = '';
  let usage: StreamChunk['usage'];
  const read = (chunk: StreamChunk | null) => {
    const choice = chunk?.choices?.[0];
    const part = choice?.delta ?? choice?.message;
    if (typeof part?.content === 'string' && part.content) {
      content += part.content;
      handlers.onText(part.content);
    }
    if (Array.isArray(part?.tool_calls)) {
      for (const [position, delta] of (part.tool_calls as (ToolCallDelta | null)[]).entries()) if (delta) assembler.add(delta, position);
    }
    if (chunk?.usage) usage = chunk.usage;
  };
  const tokens = () => ({ promptTokens: reportedTokens(usage?.prompt_tokens), completionTokens: reportedTokens(usage?.completion_tokens) });
  try {
    const response = await postStreamingChat(endpoint, request, signal);
    if (String(response.headers['content-type'] ?? '').includes('application/json')) {
      read(await response.json<StreamChunk | null>().catch(() => null));
    } else {
      for await (const data of readSseData(response.chunks())) {
        if (data === '[DONE]') break;
        try {
          read(JSON.parse(data) as StreamChunk | null);
        } catch {
          // A line that is not JSON: skipped, as the text stream does.
        }
      }
    }
  } catch (error) {
    if (!cutBy(signal)) throw error;
  }
  // Checked after a read that ended too: a JSON answer cut while read reads as none (the catch above).
  if (cutBy(signal)) return { content, ...tokens(), cut: true };
  const toolCalls = assembler.finish(newId);
  return { content, ...(toolCalls.length ? { toolCalls } : {}), ...tokens() };
}
