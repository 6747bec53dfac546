import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, preParsingHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { Errors } from '../infra/errors.js';
import { assertSafeInput } from '../infra/input-guard.js';

/**
 * How request input is read, for every route of both APIs:
 * - JSON: an empty (or blank) body is `{}`, as scripts send DELETE/GET with a JSON content type
 *   and nothing else; invalid JSON stays a 400, and prototype-poisoning keys are refused.
 * - No string or key anywhere in the query, path or body may contain U+0000 or an unpaired
 *   surrogate, no number may be non-finite (JSON's 1e400), and nothing may nest deeper than
 *   MAX_INPUT_DEPTH (400 naming the field).
 * - A body is read as sent: one in a content coding (`Content-Encoding: gzip`) is refused with
 *   415 before it is read, rather than parsed as the JSON or form it is not.
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

/** Whether a request comes with a body (as Node frames it: a length above 0, or chunks). */
function hasBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A body in a content coding is refused before it is read (no inflating: a small body may inflate to any size). */
const refuseEncodedBody: preParsingHookHandler = (request, _reply, payload, done) => {
  const encoding = request.headers['content-encoding'];
  if (encoding === undefined || !hasBody(request.headers) || encoding.trim().toLowerCase() === 'identity') return done(null, payload);
  done(Errors.contentEncodingRefused(encoding));
};

export default fp(
  async function requestBodyPlugin(app: FastifyInstance) {
    const strictJson = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      const text = body as string;
      if (text.trim() === '') return done(null, {});
      strictJson(request, text, (error, parsed) => done(error ? (poisonedKeyError(text) ?? error) : null, parsed));
    });

    // On the routes of methods that take a body only: a preParsing hook costs each of its requests a closure.
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      if (methods.every((method) => !BODY_METHODS.has(method))) return;
      const own = route.preParsing === undefined ? [] : Array.isArray(route.preParsing) ? route.preParsing : [route.preParsing];
      route.preParsing = [refuseEncodedBody, ...own];
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
