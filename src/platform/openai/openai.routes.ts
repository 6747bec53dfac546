/** v1/embeddings, v1/audio/transcriptions, core/ai/*, core/chat/item/getSpeech. */
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { countTokens } from '../../domain/token-count.js';
import { Errors } from '../../infra/errors.js';
import { zObjectId } from '../../infra/zod.js';
import type { ChatServices } from '../chat/chat-module.js';
import { jsonField, readMultipart } from '../datasets/files/multipart.js';
import { boundBodiesByCaller } from '../auth/proven-caller-bodies.js';
import { authenticateCaller, definePlatformRoute, enveloped, parseWith } from '../define-route.js';
import { EMBEDDING_DIMENSIONS, embeddingsAnswerChunks, type OpenAiService } from './openai.service.js';

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

export function registerOpenAiRoutes(app: FastifyInstance, chat: Pick<ChatServices, 'outLinks'>, service: OpenAiService): void {
  // An SDK's batch of inputs (hundreds of chunks of CJK text) passes 1 MB: a key's or session's may be larger.
  boundBodiesByCaller(app, [`${app.prefix}/v1/embeddings`]);
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
      const result = await service.embedFor(auth, texts, input.model ?? undefined, input.type, input.dimensions ?? undefined);
      // Built a slice at a time (the event loop handed back between), then sent whole: a client
      // reads its length as from any other answer.
      const parts: Buffer[] = [];
      for await (const part of embeddingsAnswerChunks(result.vectors, input.encoding_format === 'base64' ? 'base64' : 'float', input.model ?? result.model.model, result.tokens)) parts.push(part);
      return reply.type('application/json; charset=utf-8').send(Buffer.concat(parts));
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
      return service.questionGuideFor(auth, input.messages);
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
      const tokens = input.messages.reduce((sum, m) => sum + 3 + countTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '')), 0);
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
      const audio = await service.speechFor(auth, { model: input.ttsConfig.model, voice: input.ttsConfig.voice, speed: input.ttsConfig.speed, text: input.input });
      return reply.header('content-type', 'audio/mpeg').send(audio);
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
        const meta = parseWith(transcriptionData, jsonField(fields, 'data'));
        const { response_format: format } = parseWith(transcriptionFormat, { response_format: fields.response_format });
        // The chat-cert credentials ride in the `data` field; they are checked as every chat-cert route checks them.
        request.body = meta;
        const auth = await authenticateCaller(app, request, TRANSCRIBERS);
        if (!file || file.buffer.length === 0) throw Errors.missingParams("Missing field 'file' (the audio file)");
        await chat.outLinks.assertMaySpend(auth);
        const text = await service.transcribeFor(auth, file, meta.duration);
        if (format === 'text') return reply.header('content-type', 'text/plain; charset=utf-8').send(text);
        // `text` beside the envelope's `data` (which FastGPT's web client reads): where OpenAI's SDKs look.
        return reply.send(Object.assign(enveloped(text), { text }));
      },
    });
  });
}
