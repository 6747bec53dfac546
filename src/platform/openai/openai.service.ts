/** Embeddings, transcription, suggested questions and text-to-speech against the configured providers, and their billing. */
import { endianness } from 'node:os';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { countTokens } from '../../domain/token-count.js';
import { parseQuestionList } from '../../domain/workflow/prompts.js';
import { type EmbeddingPurpose, isLocalLexicalModel } from '../../infra/embeddings.js';
import { Errors } from '../../infra/errors.js';
import { chatRequestBody, completeChat, estimatePromptTokens, type LlmMessage } from '../../infra/llm-stream.js';
import { failureReason, providerErrorText, type ProviderResponse, providerRequest } from '../../infra/provider-client.js';
import { ProviderError } from '../../infra/provider-http.js';
import type { AuthContext } from '../auth/types.js';
import type { ChatServices } from '../chat/chat-module.js';
import type { AudioSpeechModel, WhisperModel } from '../../domain/models.js';
import { joinUrl } from '../../infra/join-url.js';
import { foldEmbedding, shortenEmbedding } from '../../domain/embedding-shortening.js';
import { usagePoints } from '../../domain/usage-points.js';
import type { TtsCache } from './tts-cache.repo.js';
import { setImmediate as nextTurn } from 'node:timers/promises';

export const EMBEDDING_DIMENSIONS = 1536;
/** 256 kbit/s: above what speech recordings use, so the duration it gives is a floor. */
const AUDIO_BYTES_PER_SECOND_CEILING = 32_000;
/** 16 kbit/s, a speech codec's (Opus, AMR): the duration assumed when the client reports none. */
const SPEECH_BYTES_PER_SECOND = 2_000;

const QUESTION_GUIDE_PROMPT =
  'Based on the conversation above, suggest 3 short follow-up questions the user might ask next, in the same language as the conversation, each under 20 characters. Reply with a JSON array of strings only, e.g. ["question 1","question 2","question 3"].';

/**
 * A message of the chat box as the question guide sends it, as text: the web client sends the
 * last turns with their `file_url` parts and this service's relative image links, which a
 * provider refuses (the reference drops them too: no vision for the guide), and after a user
 * select an assistant message with only its `interactive` value. What holds no text (that one, tool
 * calls and results) is left out, as the reference clears invalid messages; other fields too.
 */
function asGuideMessages(message: GuideMessage): LlmMessage[] {
  const role = message.role === 'developer' ? 'system' : message.role;
  if (role !== 'system' && role !== 'user' && role !== 'assistant') return [];
  const text = Array.isArray(message.content)
    ? (message.content as { type?: string; text?: unknown }[]).flatMap((part) => (part?.type === 'text' && typeof part.text === 'string' ? [part.text] : [])).join('\n')
    : typeof message.content === 'string'
      ? message.content
      : '';
  return text ? [{ role, content: text }] : [];
}

/** A message as the question guide's callers send it: OpenAI's roles, content possibly absent. */
export interface GuideMessage {
  role: string;
  content?: unknown;
}

/** Cuts or zero-pads a vector to the reference's fixed 1536 dimensions. */
export function normaliseDimensions(vector: number[], size = EMBEDDING_DIMENSIONS): number[] {
  if (vector.length >= size) return vector.slice(0, size);
  // Grown in place and filled: spreading two arrays cost ~0.1 ms a vector (0.2 s for 2,048).
  const sized = vector.slice();
  sized.length = size;
  return sized.fill(0, vector.length);
}

const BIG_ENDIAN = endianness() === 'BE';

/** OpenAI's `encoding_format: "base64"`: the vector as little-endian float32 bytes, base64. */
export function float32Base64(vector: readonly number[]): string {
  // One typed-array copy, not a write call per float (~8x faster for 2,048 vectors).
  const bytes = Buffer.from(Float32Array.from(vector).buffer);
  if (BIG_ENDIAN) bytes.swap32();
  return bytes.toString('base64');
}

/**
 * Vector values worked on (sized, serialised) between turns of the event loop: 2,048 inputs
 * answer 3.1 M numbers, which took 0.4–1 s at once.
 */
export const EMBEDDING_VALUES_PER_SLICE = 100_000;

/**
 * The v1/embeddings answer as JSON (OpenAI's shape), in pieces of about a slice of vectors each,
 * the event loop handed back between them: never one string of tens of MB to build and encode
 * at once.
 */
export async function* embeddingsAnswerChunks(vectors: number[][], format: 'float' | 'base64', model: string, tokens: number): AsyncGenerator<Buffer> {
  let parts: string[] = ['{"object":"list","data":['];
  let values = 0;
  for (const [index, vector] of vectors.entries()) {
    if (values >= EMBEDDING_VALUES_PER_SLICE) {
      yield Buffer.from(parts.join(''));
      parts = [];
      values = 0;
      await nextTurn();
    }
    const embedding = format === 'base64' ? JSON.stringify(float32Base64(vector)) : JSON.stringify(vector);
    parts.push(`${index > 0 ? ',' : ''}{"object":"embedding","index":${index},"embedding":${embedding}}`);
    values += vector.length;
  }
  const usage = JSON.stringify({ prompt_tokens: tokens, total_tokens: tokens });
  parts.push(`],"model":${JSON.stringify(model)},"usage":${usage}}`);
  yield Buffer.from(parts.join(''));
}

export function createOpenAiService(app: FastifyInstance, chat: Pick<ChatServices, 'models' | 'now'>, tts: TtsCache) {
  const charge = app.identity.chargeUsage;

  async function providerFailure(response: ProviderResponse, what: string, apiKey: string | undefined): Promise<never> {
    const text = providerErrorText(await response.text().catch(() => ''), apiKey, 200);
    throw Errors.badGateway(`The ${what} provider answered HTTP ${response.status}${text ? `: ${text}` : ''}`);
  }

  /**
   * One vector per input, in input order; tokens summed over the batch. `dimensions` below the
   * answered size shortens each vector as OpenAI does (prefix, back to unit length), or, for the
   * built-in lexical model, folds its hashed features into that many slots.
   */
  async function embed(inputs: string[], model: string | undefined, purpose: EmbeddingPurpose | undefined, dimensions?: number) {
    const vectorModel = app.models.vectorModelOrDefault(model);
    const { vectors, tokens } = await app.datasets
      .embed(vectorModel.model, inputs, purpose)
      .catch((error: unknown) => {
        // The provider failing is the gateway's problem, not ours (502, not 500).
        if (error instanceof ProviderError) throw Errors.badGateway(`The embedding provider failed: ${error.message}`);
        throw error;
      });
    if (vectors.length !== inputs.length) throw Errors.badGateway(`The embedding provider answered ${vectors.length} vectors for ${inputs.length} inputs`);
    const shaped: number[][] = [];
    let values = 0;
    for (const vector of vectors) {
      if (values >= EMBEDDING_VALUES_PER_SLICE) {
        values = 0;
        await nextTurn();
      }
      const sized = normaliseDimensions(vector);
      if (dimensions === undefined || dimensions >= sized.length) shaped.push(sized);
      else shaped.push(isLocalLexicalModel(vectorModel) ? foldEmbedding(sized, dimensions) : shortenEmbedding(sized, dimensions));
      values += sized.length;
    }
    return {
      vectors: shaped,
      tokens: tokens || inputs.reduce((sum, input) => sum + countTokens(input), 0),
      model: vectorModel,
    };
  }

  async function transcribe(file: { buffer: Buffer; filename: string; mimetype: string }): Promise<{ text: string; model: WhisperModel }> {
    const whisper = app.models.catalog.whisperModel;
    if (!whisper) throw Errors.missingParams('whisper model not found: no whisperModel is configured');
    const endpoint = chat.models.endpointFor(whisper);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(file.buffer)], { type: file.mimetype || 'application/octet-stream' }), file.filename || 'recording.mp3');
    form.append('model', whisper.model);
    // Undici's Response only encodes the multipart body (boundary included); the request goes over the keep-alive client.
    const multipart = new Response(form);
    const response = await providerRequest(joinUrl(endpoint.baseUrl, '/audio/transcriptions'), {
      method: 'POST',
      headers: {
        'content-type': multipart.headers.get('content-type') ?? 'multipart/form-data',
        ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}),
      },
      body: Buffer.from(await multipart.arrayBuffer()),
    }).catch((error: unknown) => {
      throw Errors.badGateway(`The transcription provider is unreachable: ${failureReason(error)}`);
    });
    if (!response.ok) await providerFailure(response, 'transcription', endpoint.apiKey);
    const body = await response.json<{ text?: unknown } | null>();
    return { text: typeof body?.text === 'string' ? body.text : '', model: whisper };
  }

  async function questionGuide(sent: GuideMessage[]) {
    const llm = chat.models.firstLlm();
    const messages: LlmMessage[] = [...sent.flatMap(asGuideMessages), { role: 'user', content: QUESTION_GUIDE_PROMPT }];
    // The one request body of every model call: the model's defaultConfig under these values.
    const result = await completeChat(llm.endpoint, chatRequestBody(llm.model, { messages, temperature: 0.1, maxTokens: 200 })).catch((error: unknown) => {
      throw Errors.badGateway((error as Error).message);
    });
    const tokens = (result.promptTokens ?? estimatePromptTokens(messages)) + (result.completionTokens ?? countTokens(result.content));
    return { questions: parseQuestionList(result.content), tokens, model: llm.model };
  }

  /** The provider's MP3 as it arrives (a refusal before the first byte is an error here). */
  async function speech(input: { model: string; voice: string; speed?: number; text: string }): Promise<{ audio: AsyncIterable<Buffer>; model: AudioSpeechModel }> {
    const model = app.models.catalog.audioSpeechModels.find((m) => m.model === input.model || m.name === input.model);
    if (!model) throw Errors.missingParams(`model or voice not found: '${input.model}' is not a configured speech model`);
    if (model.voices && !model.voices.some((v) => v.value === input.voice)) throw Errors.missingParams(`voice not found: '${input.voice}'`);
    const endpoint = chat.models.endpointFor(model);
    const response = await providerRequest(joinUrl(endpoint.baseUrl, '/audio/speech'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}) },
      body: JSON.stringify({ model: model.model, voice: input.voice, input: input.text, speed: input.speed ?? 1, response_format: 'mp3' }),
    }).catch((error: unknown) => {
      throw Errors.badGateway(`The speech provider is unreachable: ${failureReason(error)}`);
    });
    if (!response.ok) await providerFailure(response, 'speech', endpoint.apiKey);
    return { audio: response.chunks(), model };
  }

  return {
    /** `embed`, billed to the caller. */
    async embedFor(auth: AuthContext, inputs: string[], model: string | undefined, purpose: EmbeddingPurpose | undefined, dimensions?: number) {
      const result = await embed(inputs, model, purpose, dimensions);
      const points = usagePoints(result.model, result.tokens);
      await charge(auth, { appName: 'Embeddings', list: [{ moduleName: 'Embeddings', totalPoints: points, model: result.model.name, tokens: result.tokens }] });
      return result;
    },

    /** Three suggested follow-up questions, billed to the caller. */
    async questionGuideFor(auth: AuthContext, sent: GuideMessage[]): Promise<string[]> {
      const result = await questionGuide(sent);
      const points = usagePoints(result.model, result.tokens);
      await charge(auth, { appName: 'Question guide', list: [{ moduleName: 'Question guide', totalPoints: points, model: result.model.name, tokens: result.tokens }] });
      return result.questions;
    },

    /**
     * The transcript, billed by the duration the client reports, per 60 s, at least 1 s (as the
     * reference does), but never below what the file's size implies at a generous bitrate: a client
     * that reports a tiny duration for a long recording does not get it transcribed for nothing. A
     * client that reports none is billed the size at a speech codec's bitrate, rounded up.
     */
    async transcribeFor(auth: AuthContext, file: { buffer: Buffer; filename: string; mimetype: string }, reportedDuration: number | undefined): Promise<string> {
      const { text, model } = await transcribe(file);
      const bytesPerSecond = reportedDuration === undefined ? SPEECH_BYTES_PER_SECOND : AUDIO_BYTES_PER_SECOND_CEILING;
      const duration = Math.max(reportedDuration ?? 0, Math.ceil(file.buffer.length / bytesPerSecond), 1);
      await charge(auth, { appName: 'Whisper', list: [{ moduleName: 'Whisper', totalPoints: usagePoints(model, duration, 60), model: model.name, duration }] });
      return text;
    },

    /**
     * The MP3 of `input.text`: the team's cached recording (free, as the reference), else the
     * provider's, relayed as it arrives (the client plays while the rest comes) and cached once
     * whole. Billed once any audio was sent, whole or not: a client closing the connection before
     * the end still had it made (and would otherwise never pay).
     */
    async speechFor(auth: AuthContext, input: { model: string; voice: string; speed?: number; text: string }): Promise<Buffer | Readable> {
      const bufferId = `${input.model}-${input.voice}`;
      const cacheKey = JSON.stringify({ text: input.text, speed: input.speed ?? 1 });
      const now = new Date(chat.now());
      const cached = await tts.get(auth.teamId, bufferId, cacheKey, now);
      if (cached) return cached;
      const { audio, model } = await speech(input);
      async function settle(parts: Buffer[], whole: boolean) {
        try {
          if (whole) await tts.put(auth.teamId, bufferId, cacheKey, Buffer.concat(parts), now);
          if (parts.length === 0) return;
          // Priced per 1000 characters.
          const charsLength = input.text.length;
          await charge(auth, { appName: 'Speech', list: [{ moduleName: 'Speech', totalPoints: usagePoints(model, charsLength), model: model.name, charsLength }] });
        } catch (error) {
          app.log.warn({ err: error }, 'speech sent, but not cached or billed');
        }
      }
      async function* relay() {
        const parts: Buffer[] = [];
        let whole = false;
        try {
          for await (const chunk of audio) {
            parts.push(chunk);
            yield chunk;
          }
          whole = true;
        } finally {
          await settle(parts, whole);
        }
      }
      return Readable.from(relay());
    },
  };
}

export type OpenAiService = ReturnType<typeof createOpenAiService>;
