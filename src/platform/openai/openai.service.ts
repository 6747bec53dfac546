/** Embeddings, transcription, suggested questions and text-to-speech against the configured providers. */
import type { FastifyInstance } from 'fastify';
import { estimateTokens, parseQuestionList } from '../../domain/workflow/prompts.js';
import { type EmbeddingPurpose, isLocalLexicalModel } from '../../infra/embeddings.js';
import { Errors } from '../../infra/errors.js';
import { completeChat, type LlmMessage } from '../../infra/llm-stream.js';
import { failureReason, providerErrorText, type ProviderResponse, providerRequest } from '../../infra/provider-client.js';
import { ProviderError } from '../../infra/provider-http.js';
import type { ChatModule } from '../chat/chat-module.js';
import type { AudioSpeechModel, WhisperModel } from '../../domain/models.js';
import { joinUrl } from '../../infra/join-url.js';
import { foldEmbedding, shortenEmbedding } from '../../domain/embedding-shortening.js';

export const EMBEDDING_DIMENSIONS = 1536;

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
  return [...vector, ...new Array<number>(size - vector.length).fill(0)];
}

/** OpenAI's `encoding_format: "base64"`: the vector as little-endian float32 bytes, base64. */
export function float32Base64(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  for (const [index, value] of vector.entries()) bytes.writeFloatLE(value, index * 4);
  return bytes.toString('base64');
}

export function createOpenAiService(app: FastifyInstance, chat: ChatModule) {
  async function providerFailure(response: ProviderResponse, what: string, apiKey: string | undefined): Promise<never> {
    const text = providerErrorText(await response.text().catch(() => ''), apiKey, 200);
    throw Errors.badGateway(`The ${what} provider answered HTTP ${response.status}${text ? `: ${text}` : ''}`);
  }

  return {
    /**
     * One vector per input, in input order; tokens summed over the batch. `dimensions` below the
     * answered size shortens each vector as OpenAI does (prefix, back to unit length), or, for the
     * built-in lexical model, folds its hashed features into that many slots.
     */
    async embed(inputs: string[], model: string | undefined, purpose: EmbeddingPurpose | undefined, dimensions?: number) {
      const vectorModel = app.models.vectorModelOrDefault(model);
      const { vectors, tokens } = await app.datasets
        .embed(vectorModel.model, inputs, purpose)
        .catch((error: unknown) => {
          // The provider failing is the gateway's problem, not ours (502, not 500).
          if (error instanceof ProviderError) throw Errors.badGateway(`The embedding provider failed: ${error.message}`);
          throw error;
        });
      if (vectors.length !== inputs.length) throw Errors.badGateway(`The embedding provider answered ${vectors.length} vectors for ${inputs.length} inputs`);
      return {
        vectors: vectors.map((vector) => {
          const sized = normaliseDimensions(vector);
          if (dimensions === undefined || dimensions >= sized.length) return sized;
          return isLocalLexicalModel(vectorModel) ? foldEmbedding(sized, dimensions) : shortenEmbedding(sized, dimensions);
        }),
        tokens: tokens || inputs.reduce((sum, input) => sum + estimateTokens(input), 0),
        model: vectorModel,
      };
    },

    async transcribe(file: { buffer: Buffer; filename: string; mimetype: string }): Promise<{ text: string; model: WhisperModel }> {
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
    },

    async questionGuide(sent: GuideMessage[]) {
      const llm = chat.models.firstLlm();
      const messages = sent.flatMap(asGuideMessages);
      const result = await completeChat(llm.endpoint, {
        model: llm.model.model,
        messages: [...messages, { role: 'user', content: QUESTION_GUIDE_PROMPT }],
        temperature: 0.1,
        max_tokens: 200,
      }).catch((error: unknown) => {
        throw Errors.badGateway((error as Error).message);
      });
      const text = messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n');
      const tokens = (result.promptTokens ?? estimateTokens(text)) + (result.completionTokens ?? estimateTokens(result.content));
      return { questions: parseQuestionList(result.content), tokens, model: llm.model };
    },

    /** The provider's MP3 as it arrives (a refusal before the first byte is an error here). */
    async speech(input: { model: string; voice: string; speed?: number; text: string }): Promise<{ audio: AsyncIterable<Buffer>; model: AudioSpeechModel }> {
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
    },
  };
}
