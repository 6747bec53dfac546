import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { keepSentAnswer } from '../infra/answer-memo.js';

/** Memoised answers (infra/answer-memo.ts): the bytes of a first send are kept as it leaves. */
export default fp(
  async function answerMemoPlugin(app: FastifyInstance) {
    app.addHook('onSend', (request, reply, payload, done) => {
      keepSentAnswer(request, reply, payload);
      done(null, payload);
    });
  },
  { name: 'answer-memo' },
);
