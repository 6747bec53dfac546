import type { FastifyInstance } from 'fastify';
import { registerOpenAiRoutes } from './openai.routes.js';

/** OpenAI-style embeddings, transcriptions and speech, and the core/ai helpers, under /api. */
export async function openaiRoutes(api: FastifyInstance): Promise<void> {
  registerOpenAiRoutes(api, api.chat);
}
