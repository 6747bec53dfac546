// v1/chat/completions reduced to the work outside the service's own code: one call to the same
// LLM, one usage insert, then the bytes our server answered. options: { llmUrl, contentType, base64 }
export default function register(app, { db, options }) {
  const usages = db.collection('bench_usages');
  const bytes = Buffer.from(options.base64, 'base64');
  app.post('/api/v1/chat/completions', async (request, reply) => {
    const question = request.body.messages.at(-1).content;
    const answer = await fetch(`${options.llmUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-llm', messages: [{ role: 'user', content: question }], stream: false }),
    }).then((response) => response.json());
    await usages.insertOne({ teamId: 'bench', appName: 'bench', time: new Date(), totalPoints: 0, list: [{ moduleName: 'AI chat', tokens: answer.usage.total_tokens }] });
    return reply.type(options.contentType).send(bytes);
  });
}
