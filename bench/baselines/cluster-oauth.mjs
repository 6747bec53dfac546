// The password grant reduced to its work: the user lookup, the same scrypt check, the allow-list
// insert; plus a bare /healthz.
import { randomBytes, scrypt as scryptCallback } from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCallback);
const KDF = { N: 16384, r: 8, p: 1 };

export default async function register(app, { db }) {
  const salt = randomBytes(16);
  const key = await scrypt('P@88w0rd', salt, 64, KDF);
  await db.collection('bench_users').insertOne({ _id: 'admin', salt, key });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body))));
  app.post('/token', async (request, reply) => {
    const user = await db.collection('bench_users').findOne({ _id: request.body.username });
    const derived = await scrypt(request.body.password, user.salt.buffer, 64, KDF);
    if (!derived.equals(Buffer.from(user.key.buffer))) return reply.code(400).send({ error: 'invalid_grant' });
    await db.collection('bench_tokens').insertOne({ token: randomBytes(32).toString('hex'), at: new Date() });
    return { access_token: 'x', token_type: 'Bearer', expires_in: 7200 };
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
}
