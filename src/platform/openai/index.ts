import type { FastifyInstance } from 'fastify';
import { startPeriodicTask } from '../../infra/backoff.js';
import { registerOpenAiRoutes } from './openai.routes.js';
import { createOpenAiService } from './openai.service.js';
import { createTtsCache, TTS_INDEXES } from './tts-cache.repo.js';

/** How often expired speech cache entries are removed. */
const TTS_SWEEP_MS = 60 * 60 * 1000;

/** OpenAI-style embeddings, transcriptions and speech, and the core/ai helpers, under /api. */
export async function openaiRoutes(api: FastifyInstance): Promise<void> {
  // The module's one collection, the speech cache: its index and expiry sweep live with the module.
  const tts = createTtsCache(api.mongo.db);
  let sweeper: { stop(): void } | undefined;
  api.startup.add('indexes: speech cache', async () => {
    await api.mongo.ensureIndexes(TTS_INDEXES);
    sweeper = startPeriodicTask({
      name: 'speech cache sweep',
      intervalMs: TTS_SWEEP_MS,
      task: () => tts.sweep(new Date(api.chat.now())),
      log: api.log,
      onFailure: (error) => api.opsMetrics.databaseError('speech-cache-sweep', error),
    });
  });
  api.addHook('onClose', async () => sweeper?.stop());
  registerOpenAiRoutes(api, api.chat, createOpenAiService(api, api.chat, tts));
}
