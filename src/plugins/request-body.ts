import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { assertSafeInput } from '../infra/input-guard.js';

/**
 * How request input is read, for every route of both APIs:
 * - JSON: an empty (or blank) body is `{}`, as scripts send DELETE/GET with a JSON content type
 *   and nothing else; invalid JSON stays a 400, and prototype-poisoning keys are refused.
 * - No string anywhere in the query, path or body may contain U+0000, and nothing may nest
 *   deeper than MAX_INPUT_DEPTH (400 naming the field).
 */
/**
 * Why valid JSON was refused, naming the key: the strict parser says "not valid JSON" for a
 * `__proto__` key or a `constructor` holding `prototype` (only this failure path parses again).
 */
function poisonedKeyError(text: string): Error | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  try {
    assertSafeInput(value, 'body');
  } catch (error) {
    return error as Error;
  }
  return undefined;
}

export default fp(
  async function requestBodyPlugin(app: FastifyInstance) {
    const strictJson = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      const text = body as string;
      if (text.trim() === '') return done(null, {});
      strictJson(request, text, (error, parsed) => done(error ? (poisonedKeyError(text) ?? error) : null, parsed));
    });

    // Synchronous (a throw reaches the error handler): an async hook costs every request a promise.
    app.addHook('preValidation', (request, _reply, done) => {
      assertSafeInput(request.query);
      assertSafeInput(request.params);
      assertSafeInput(request.body, 'body');
      done();
    });
  },
  { name: 'request-body' },
);
