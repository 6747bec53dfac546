// A local OpenAI-compatible model answering a non-streaming chat completion at once, in a process
// of its own (bench/compare-builds.mjs), so the load generator does not share its event loop.
const answer = JSON.stringify({
  id: 'x',
  object: 'chat.completion',
  created: 0,
  model: 'fake-llm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake model' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
});

export default function register(app) {
  app.post('/v1/chat/completions', async (_request, reply) => reply.type('application/json').send(answer));
}
