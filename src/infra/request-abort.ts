import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * An AbortController aborted once the client goes away before its answer was written: the
 * connection closed early, or the request body was cut. Work done for that client alone (a chat
 * turn, pages read for it) stops then instead of running for no one.
 */
export function abortOnClose(request: FastifyRequest, reply: FastifyReply): AbortController {
  const controller = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableEnded) controller.abort();
  });
  request.raw.on('aborted', () => controller.abort());
  return controller;
}
