import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { AnswerMemo, MemoisedAnswer, NO_MEMO, sendMemoised } from '../../src/infra/answer-memo.js';
import answerMemo from '../../src/plugins/answer-memo.js';

describe('AnswerMemo', () => {
  it('keeps at most max answers, dropping the least recently used', () => {
    const memo = new AnswerMemo(2);
    const [one, two, three] = [Buffer.from('1'), Buffer.from('2'), Buffer.from('3')];
    memo.set('a', one);
    memo.set('b', two);
    expect(memo.get('a')).toBe(one); // a is now the most recent
    memo.set('c', three);
    expect(memo.get('b')).toBeUndefined();
    expect(memo.get('a')).toBe(one);
    expect(memo.get('c')).toBe(three);
  });

  it('keeps nothing when max is 0', () => {
    NO_MEMO.set('a', Buffer.from('1'));
    expect(NO_MEMO.get('a')).toBeUndefined();
  });
});

describe('sendMemoised', () => {
  it('sends the bytes the route serializer writes, computing once per key (non-ASCII text included)', async () => {
    const app = Fastify();
    await app.register(answerMemo);
    const seen: unknown[] = [];
    app.addHook('preSerialization', async (_request, _reply, payload) => {
      seen.push(payload);
      return payload;
    });
    const memo = new AnswerMemo(4);
    let computed = 0;
    const schema = { response: { 200: { type: 'object', properties: { n: { type: 'number' }, kept: { type: 'string' } } } } };
    app.get('/memo', { schema }, (_request, reply) =>
      sendMemoised(reply, new MemoisedAnswer(memo, 'k', () => ({ n: ++computed, kept: 'yes: é, 中文, 👍', dropped: 'not in the schema' }))),
    );
    app.get('/plain', { schema }, () => ({ n: 1, kept: 'yes: é, 中文, 👍', dropped: 'not in the schema' }));
    const plain = await app.inject({ method: 'GET', url: '/plain' });
    const first = await app.inject({ method: 'GET', url: '/memo' });
    const second = await app.inject({ method: 'GET', url: '/memo' });
    expect(first.body).toBe(plain.body);
    expect(first.headers['content-type']).toBe(plain.headers['content-type']);
    expect(second.body).toBe(first.body);
    expect(second.json()).toEqual({ n: 1, kept: 'yes: é, 中文, 👍' });
    expect(second.headers['content-type']).toBe(first.headers['content-type']);
    expect(second.headers['content-length']).toBe(first.headers['content-length']);
    expect(computed).toBe(1);
    // The first send took the route's usual path (hooks included); the second sent the bytes kept.
    expect(seen).toHaveLength(2);
    await app.close();
  });

  it('memoises nothing when computing fails', async () => {
    const app = Fastify();
    await app.register(answerMemo);
    const memo = new AnswerMemo(4);
    let calls = 0;
    app.get('/memo', (_request, reply) =>
      sendMemoised(
        reply,
        new MemoisedAnswer(memo, 'k', () => {
          calls += 1;
          if (calls === 1) throw new Error('first call fails');
          return { ok: true };
        }),
      ),
    );
    expect((await app.inject({ method: 'GET', url: '/memo' })).statusCode).toBe(500);
    expect((await app.inject({ method: 'GET', url: '/memo' })).json()).toEqual({ ok: true });
    await app.close();
  });
});
