/** v1/embeddings, v1/audio/transcriptions, core/ai/*, core/chat/item/getSpeech. */
import { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { estimateTokens } from '../../domain/workflow/prompts.js';
import { startPeriodicTask } from '../../infra/backoff.js';
import { Errors } from '../../infra/errors.js';
import { zObjectId } from '../../infra/zod.js';
import type { ChatModule } from '../chat/chat-module.js';
import { readMultipart } from '../datasets/files/multipart.js';
import { authenticateCaller, definePlatformRoute, parseWith } from '../define-route.js';
import { createOpenAiService, EMBEDDING_DIMENSIONS, float32Base64 } from './openai.service.js';
import { createTtsCache, TTS_INDEXES } from './tts-cache.repo.js';
import { usagePoints } from '../../domain/usage-points.js';

/** OpenAI's own cap on the inputs of one embeddings request. */
const EMBEDDING_BATCH_MAX = 2048;

/** `number[]` or `number[][]`: tiktoken ids, as OpenAI's API allows and LangChain-Python sends by default. */
function isTokenIds(input: unknown): boolean {
  return Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === 'number' || (Array.isArray(item) && item.every((id) => typeof id === 'number')));
}

const TOKEN_IDS_REFUSED =
  'token ids are not accepted (there is no tokenizer here to decode them): send the text itself, a string or an array of strings (LangChain OpenAIEmbeddings: set check_embedding_ctx_length=False)';

const embeddingsSchema = z
  .object({
    input: z.union([z.string(), z.array(z.string())], {
      error: (issue) => (isTokenIds(issue.input) ? TOKEN_IDS_REFUSED : 'input must be a string or an array of strings'),
    }).superRefine((input, context) => {
      const list = typeof input === 'string' ? [input] : input;
      if (list.length === 0) context.addIssue({ code: 'custom', message: 'input is empty' });
      if (list.length > EMBEDDING_BATCH_MAX) context.addIssue({ code: 'custom', message: `at most ${EMBEDDING_BATCH_MAX} inputs per request (split the batch)` });
      const empty = list.findIndex((text) => text.length === 0);
      if (empty >= 0) context.addIssue({ code: 'custom', path: typeof input === 'string' ? [] : [empty], message: 'must not be empty' });
    }),
    model: z.string().max(200).nullish(),
    encoding_format: z.enum(['float', 'base64']).nullish(),
    type: z.enum(['query', 'db']).optional(),
    // OpenAI's text-embedding-3 shortening; the answered vectors are EMBEDDING_DIMENSIONS long.
    dimensions: z
      .number({ error: 'must be an integer' })
      .int('must be an integer')
      .min(1, 'must be at least 1')
      .max(EMBEDDING_DIMENSIONS, `must be at most ${EMBEDDING_DIMENSIONS}, the size of the vectors this service answers`)
      .nullish(),
    billId: z.string().optional(),
  })
  // Other OpenAI fields (user …) are accepted and ignored.
  .loose();

const TRANSCRIPTION_MAX_BYTES = 20 * 1024 * 1024;
/**
 * Text fields of one transcription form: FastGPT's client sends `data`; the OpenAI SDK sends
 * model, language, prompt, response_format, temperature and one `timestamp_granularities[]` per value.
 */
const TRANSCRIPTION_MAX_FIELDS = 20;
/** Who may transcribe: share-page and team-space visitors (credentials in the `data` field), then members. */
const TRANSCRIBERS = ['outLink', 'teamSpace', 'session'] as const;
/** 256 kbit/s: above what speech recordings use, so the duration it gives is a floor. */
const AUDIO_BYTES_PER_SECOND_CEILING = 32_000;
/** How often expired speech cache entries are removed. */
const TTS_SWEEP_MS = 60 * 60 * 1000;

/**
 * A chat message as clients send one (OpenAI's roles; the web client's `chats2GPTMessages` makes
 * an assistant message of a user select's `interactive` value, with no content).
 */
const simpleMessage = z.object({ role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']), content: z.union([z.string(), z.array(z.any())]).nullish() }).loose();
const guideSchema = z.object({ messages: z.array(simpleMessage).min(1, 'messages must not be empty').max(50), shareId: z.string().optional(), outLinkUid: z.string().optional() }).loose();
const tokenSchema = z.object({ messages: z.array(simpleMessage).max(1000) });
const speechSchema = z.object({
  ttsConfig: z.object({ type: z.string().optional(), model: z.string().min(1, 'model or voice not found'), voice: z.string().min(1, 'model or voice not found'), speed: z.number().min(0.25).max(4).optional() }),
  input: z.string().min(1).max(4096),
  shareId: z.string().optional(),
  outLinkUid: z.string().optional(),
});
/**
 * OpenAI's `response_format` form field: `text` is the bare transcript; json and verbose_json
 * the envelope with `text`. Subtitles need timings the transcript does not have.
 */
const transcriptionFormat = z.object({ response_format: z.enum(['json', 'verbose_json', 'text']).optional() });
const transcriptionData = z.object({
  appId: zObjectId.optional(),
  duration: z.number().min(0).max(3600).optional(),
  shareId: z.string().optional(),
  outLinkUid: z.string().optional(),
  teamId: z.string().optional(),
  teamToken: z.string().optional(),
});

export function registerOpenAiRoutes(app: FastifyInstance, chat: ChatModule): void {
  const service = createOpenAiService(app, chat);
  const tts = createTtsCache(app.mongo.db);
  let sweeper: { stop(): void } | undefined;
  app.startup.add('indexes: speech cache', async () => {
    await app.mongo.ensureIndexes(TTS_INDEXES);
    sweeper = startPeriodicTask({
      name: 'speech cache sweep',
      intervalMs: TTS_SWEEP_MS,
      task: () => tts.sweep(new Date(chat.now())),
      log: app.log,
      onFailure: (error) => app.opsMetrics.databaseError('speech-cache-sweep', error),
    });
  });
  app.addHook('onClose', async () => sweeper?.stop());
  const charge = app.identity.chargeUsage;

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/v1/embeddings',
    auth: ['apiKey', 'session'],
    openAiErrors: true,
    input: embeddingsSchema,
    raw: true,
    summary: 'OpenAI-compatible embeddings: one 1536-dimension vector per input, in order (float or base64); `dimensions` shortens them (prefix renormalised)',
    tags: ['openai'],
    handler: async ({ input, auth, reply }) => {
      const texts = Array.isArray(input.input) ? input.input : [input.input];
      const result = await service.embed(texts, input.model ?? undefined, input.type, input.dimensions ?? undefined);
      const points = usagePoints(result.model, result.tokens);
      await charge(auth, { appName: 'Embeddings', list: [{ moduleName: 'Embeddings', totalPoints: points, model: result.model.name, tokens: result.tokens }] });
      return reply.send({
        object: 'list',
        data: result.vectors.map((vector, index) => ({ object: 'embedding', index, embedding: input.encoding_format === 'base64' ? float32Base64(vector) : vector })),
        model: input.model ?? result.model.model,
        usage: { prompt_tokens: result.tokens, total_tokens: result.tokens },
      });
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/ai/agent/createQuestionGuide',
    auth: ['outLink', 'teamSpace', 'apiKey', 'session'],
    appBoundKey: true,
    input: guideSchema,
    summary: 'Suggests 3 follow-up questions for a conversation',
    tags: ['openai'],
    handler: async ({ input, auth }) => {
      await chat.outLinks.assertMaySpend(auth);
      const result = await service.questionGuide(input.messages);
      const points = usagePoints(result.model, result.tokens);
      await charge(auth, { appName: 'Question guide', list: [{ moduleName: 'Question guide', totalPoints: points, model: result.model.name, tokens: result.tokens }] });
      return result.questions;
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/ai/token',
    auth: ['rootKey'],
    input: tokenSchema,
    summary: 'Counts the tokens of messages (diagnostic; root key only)',
    tags: ['openai'],
    handler: async ({ input }) => {
      const started = performance.now();
      const tokens = input.messages.reduce((sum, m) => sum + 3 + estimateTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '')), 0);
      // No process memory figures: they help an attacker more than an operator.
      return { tokens, time: Math.round(performance.now() - started) };
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/chat/item/getSpeech',
    auth: ['outLink', 'teamSpace', 'session'],
    input: speechSchema,
    raw: true,
    summary: 'Text to speech (raw MP3 bytes)',
    tags: ['openai'],
    handler: async ({ input, auth, reply }) => {
      await chat.outLinks.assertMaySpend(auth);
      const bufferId = `${input.ttsConfig.model}-${input.ttsConfig.voice}`;
      const cacheKey = JSON.stringify({ text: input.input, speed: input.ttsConfig.speed ?? 1 });
      const now = new Date(chat.now());
      const cached = await tts.get(auth.teamId, bufferId, cacheKey, now);
      if (cached) return reply.header('content-type', 'audio/mpeg').send(cached);
      const { audio, model } = await service.speech({ model: input.ttsConfig.model, voice: input.ttsConfig.voice, speed: input.ttsConfig.speed, text: input.input });
      // Relayed as it arrives, as the reference pipes it (the client plays while the rest comes);
      // cached once whole. Billed once any audio was sent, whole or not: a client closing the
      // connection before the end still had it made (and would otherwise never pay).
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
      async function settle(parts: Buffer[], whole: boolean) {
        try {
          if (whole) await tts.put(auth.teamId, bufferId, cacheKey, Buffer.concat(parts), now);
          if (parts.length === 0) return;
          // Priced per 1000 characters; an answer from the cache costs nothing (as the reference).
          const charsLength = input.input.length;
          await charge(auth, { appName: 'Speech', list: [{ moduleName: 'Speech', totalPoints: usagePoints(model, charsLength), model: model.name, charsLength }] });
        } catch (error) {
          app.log.warn({ err: error }, 'speech sent, but not cached or billed');
        }
      }
      return reply.header('content-type', 'audio/mpeg').send(Readable.from(relay()));
    },
  });

  // Multipart needs its own encapsulated scope (the parser is registered per context).
  app.register(async (scope) => {
    // Limits per request in readMultipart (file size, one file, TRANSCRIPTION_MAX_FIELDS text fields).
    await scope.register(multipart);
    definePlatformRoute(scope, {
      methods: ['POST', 'GET'],
      url: '/v1/audio/transcriptions',
      auth: [],
      credentialsInBody: TRANSCRIBERS,
      openAiErrors: true,
      raw: true,
      summary: 'Speech to text through the configured whisper model (multipart: file + data JSON); answers the text in the envelope (`data`) and as `text`, or bare with `response_format` text',
      tags: ['openai'],
      handler: async ({ request, reply }) => {
        const { file, fields } = await readMultipart(request, TRANSCRIPTION_MAX_BYTES, TRANSCRIPTION_MAX_FIELDS);
        let data: unknown = {};
        if (fields.data !== undefined) {
          try {
            data = JSON.parse(fields.data);
          } catch {
            throw Errors.missingParams("Field 'data' must be a JSON string");
          }
        }
        const meta = parseWith(transcriptionData, data);
        const { response_format: format } = parseWith(transcriptionFormat, { response_format: fields.response_format });
        // The chat-cert credentials ride in the `data` field; they are checked as every chat-cert route checks them.
        request.body = meta;
        const auth = await authenticateCaller(app, request, TRANSCRIBERS);
        if (!file || file.buffer.length === 0) throw Errors.missingParams("Missing field 'file' (the audio file)");
        await chat.outLinks.assertMaySpend(auth);
        const { text, model } = await service.transcribe(file);
        // Billed by the duration the client reports, per 60 s, as the reference does, but never
        // below what the file's size implies at a generous bitrate: a client that reports no or a
        // tiny duration for a long recording does not get it transcribed for nothing.
        const duration = Math.max(meta.duration ?? 0, Math.floor(file.buffer.length / AUDIO_BYTES_PER_SECOND_CEILING));
        await charge(auth, { appName: 'Whisper', list: [{ moduleName: 'Whisper', totalPoints: usagePoints(model, duration, 60), model: model.name, duration }] });
        if (format === 'text') return reply.header('content-type', 'text/plain; charset=utf-8').send(text);
        // `text` beside the envelope's `data` (which FastGPT's web client reads): where OpenAI's SDKs look.
        return reply.send({ code: 200, statusText: '', message: '', data: text, text });
      },
    });
  });
}
