// v1/chat/completions reduced to the work outside the service's own code: one call to the same
// LLM (node:http with a keep-alive agent, the cheapest client Node has), then the bytes our
// server answered, and one usage record that the answer does not wait for, written with the
// others of the same 100 ms in one insert (as the service writes usage behind its answers).
// options: { llmUrl, contentType, base64 }
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });

function callLlm(url, body) {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

export default function register(app, { db, options }) {
  const usages = db.collection('bench_usages');
  const bytes = Buffer.from(options.base64, 'base64');
  let buffered = [];
  const record = (doc, log) => {
    buffered.push(doc);
    if (buffered.length > 1) return;
    setTimeout(() => {
      const batch = buffered;
      buffered = [];
      usages.insertMany(batch, { ordered: false }).catch((error) => log.error(error));
    }, 100);
  };
  app.post('/api/v1/chat/completions', async (request, reply) => {
    const question = request.body.messages.at(-1).content;
    const answer = await callLlm(`${options.llmUrl}/chat/completions`, JSON.stringify({ model: 'fake-llm', messages: [{ role: 'user', content: question }], stream: false }));
    record({ teamId: 'bench', appName: 'bench', time: new Date(), totalPoints: 0, list: [{ moduleName: 'AI chat', tokens: answer.usage.total_tokens }] }, request.log);
    return reply.type(options.contentType).send(bytes);
  });
}
