import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../../infra/errors.js';
import type { AuthKind } from './types.js';

/** The kinds a request proves in its headers alone: a session token or cookie, an API key, the root key. */
const HEADER_KINDS: readonly AuthKind[] = ['session', 'apiKey', 'rootKey'];

/**
 * Whether the request's headers alone prove a caller of one of `kinds` (its session, API key or
 * root key resolves), before its body is read. A wrong or unusable credential answers false, as
 * none does: the route's own authentication, once the body is read, gives the refusal.
 */
export async function headersProveCaller(app: FastifyInstance, request: FastifyRequest, kinds: readonly AuthKind[]): Promise<boolean> {
  const headerKinds = kinds.filter((kind) => HEADER_KINDS.includes(kind));
  if (headerKinds.length === 0) return false;
  return app.platformAuth.authenticate(request, headerKinds).then(
    () => true,
    () => false,
  );
}

/**
 * Admission of a body read before its sender is known (share-page and team-space uploads name
 * their credentials as form fields, after the file). A request whose headers already prove a
 * caller of one of the route's kinds is read at once. Any other takes one of the process's
 * UPLOADS_BEFORE_AUTH_MAX places until its response ends, or is refused with 429: bodies of
 * unknown senders hold at most that many uploads in memory. The route still authenticates once
 * the body is read, with its field credentials first, as the reference does.
 */
export async function admitBodyBeforeCredentials(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, kinds: readonly AuthKind[]): Promise<void> {
  if (await headersProveCaller(app, request, kinds)) return;
  const release = app.uploadsBeforeAuth.tryEnter();
  if (!release) {
    throw Errors.tooManyRequest('Too many uploads from senders not yet identified are being read; try again shortly, or send a session token or API key in the headers', 1);
  }
  reply.raw.once('close', release);
}
