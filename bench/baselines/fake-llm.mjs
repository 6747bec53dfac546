// A local OpenAI-compatible model answering a non-streaming chat completion at once, in a process
// of its own (bench/compare-builds.mjs), so the load generator does not share its event loop.
import { FAKE_LLM_ANSWER } from '../fixtures.mjs';

const answer = JSON.stringify(FAKE_LLM_ANSWER);

export default function register(app) {
  app.post('/v1/chat/completions', async (_request, reply) => reply.type('application/json').send(answer));
}
