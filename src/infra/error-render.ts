import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { describeError, isDatabaseUnavailable } from './database-errors.js';
import { type AppError, Errors, isAppError } from './errors.js';
import { LlmError } from './llm-stream.js';
import { LockLostError } from './mongo-lock.js';
import { ProviderReplyError } from './provider-client.js';
import { isProviderError, type ProviderError } from './provider-http.js';

/** Provider statuses a retry of the same request may get past: a timeout, a conflict, a rate limit. */
const PASSING_STATUSES = new Set([408, 409, 429]);

/**
 * A model provider's failure as this service's 502, telling clients whether sending the request
 * again can help (the OpenAI SDKs retry a 502 twice by default, re-running a whole workflow each
 * time): `x-should-retry: false` when the provider refused the request itself (a 4xx other than
 * 408, 409 or 429, such as a prompt over the context or a wrong provider key) or is not set up;
 * its Retry-After passed on after a rate limit.
 */
export function gatewayError(error: LlmError | ProviderError | ProviderReplyError): AppError {
  const status = error instanceof LlmError ? error.reply?.status : isProviderError(error) ? error.status : undefined;
  const settled = isProviderError(error) && (error.kind === 'invalid_input' || error.kind === 'not_configured');
  const refused = status !== undefined && status >= 400 && status < 500 && !PASSING_STATUSES.has(status);
  const retryAfter = error instanceof LlmError ? error.reply?.retryAfter : undefined;
  if (settled || refused) return Errors.badGateway(error.message, { 'x-should-retry': 'false' });
  return Errors.badGateway(error.message, retryAfter && /^\d{1,6}$/.test(retryAfter) ? { 'retry-after': retryAfter } : undefined);
}

/** Which body shape a URL's errors take: OAuth JSON, Kubernetes Status, or the platform envelope. */
export type ErrorFormat = 'platform' | 'oauth' | 'k8s';

export function errorFormatFor(url: string): ErrorFormat {
  if (url === '/oauth' || url.startsWith('/oauth/') || url.startsWith('/oauth?')) return 'oauth';
  if (url === '/kapis' || url.startsWith('/kapis/') || url.startsWith('/kapis?')) return 'k8s';
  return 'platform';
}

/** The OpenAI-style part of the platform API: its errors, known route or not, carry OpenAI's `error` object. */
function isOpenAiUrl(url: string): boolean {
  return url.startsWith('/api/v1/');
}

const K8S_REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  408: 'Timeout',
  409: 'Conflict',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  429: 'TooManyRequests',
  431: 'RequestHeaderFieldsTooLarge',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

const OAUTH_ERRORS: Record<number, string> = { 400: 'invalid_request', 401: 'invalid_client', 429: 'invalid_grant' };

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export function renderError(error: AppError, requested: ErrorFormat): RenderedError {
  const headers = error.headers ?? {};
  // The cluster's authentication step answers with a Kubernetes Status even on /oauth (as the
  // reference, where it runs before any OAuth handler): its errors carry a Status reason.
  const format = requested === 'oauth' && error.k8sReason ? 'k8s' : requested;
  if (format === 'oauth') {
    const name = error.oauthError ?? OAUTH_ERRORS[error.httpStatus] ?? (error.httpStatus >= 500 ? 'server_error' : 'invalid_request');
    const body: Record<string, unknown> = { error: name };
    if (error.message) body.error_description = error.message;
    return { status: error.httpStatus, headers, body };
  }
  if (format === 'k8s') {
    return {
      status: error.httpStatus,
      headers,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: error.message,
        reason: error.k8sReason ?? K8S_REASONS[error.httpStatus] ?? 'Unknown',
        // Kubernetes omits an empty `details` (a 401 Status has none).
        ...(error.k8sDetails ? { details: error.k8sDetails } : {}),
        code: error.httpStatus,
      },
    };
  }
  return { status: error.httpStatus, headers, body: platformErrorBody(error) };
}

/** The platform envelope of an error. */
export type PlatformErrorBody = { code: number; statusText: string; message: string; data: null };

export function platformErrorBody(error: AppError): PlatformErrorBody {
  return { code: error.code, statusText: error.statusText, message: error.message, data: null };
}

function isPlatformErrorBody(value: unknown): value is PlatformErrorBody {
  const body = value as Partial<PlatformErrorBody> | null;
  return typeof body === 'object' && body !== null && typeof body.message === 'string' && typeof body.statusText === 'string' && !('error' in body);
}

const OPENAI_ERROR_TYPES: Record<number, string> = { 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 429: 'rate_limit_error' };

/** OpenAI's error `type` for an HTTP status: its names for 401/403/404/429, `server_error` for 5xx, else `invalid_request_error`. */
export function openAiErrorType(status: number): string {
  if (status >= 500) return 'server_error';
  return OPENAI_ERROR_TYPES[status] ?? 'invalid_request_error';
}

/**
 * The envelope with OpenAI's `error` object beside its fields, for the OpenAI-style routes and
 * their stream error frames: OpenAI SDKs read only `error.message` (and raise on a frame only
 * when it has `error`), FastGPT's clients keep reading `message` and `statusText`. `code` is
 * the statusText (null when empty). Anything but an error envelope is returned as it is.
 */
export function withOpenAiError<T>(status: number, body: T): T | (PlatformErrorBody & { error: { message: string; type: string; code: string | null } }) {
  if (status < 400 || !isPlatformErrorBody(body)) return body;
  return { ...body, error: { message: body.message, type: openAiErrorType(status), code: body.statusText || null } };
}

/** The log calls an error's line needs: a request's logger, or the app's for a request that never got one. */
export interface ErrorLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface ErrorAnswerOptions {
  /** Adds OpenAI's `error` object to the body (default: the URL is under /api/v1/). */
  openAi?: boolean;
  /** The line's message for a refusal (4xx): default `request refused`. */
  refused?: string;
  /** The line's message for a failure (5xx, a bug, an outage): default the handler's words for each. */
  failed?: string;
  /** Fields the line carries besides (the request id of an answer written on the socket, ...). */
  fields?: Record<string, unknown>;
}

/**
 * Every path that answers an error (the error handler, the not-found handler, the router's and
 * the HTTP parser's refusals, an error met while streaming) goes through here: the error as an
 * AppError, logged once, rendered in the URL's format. A refusal's text is logged under `reason`
 * (its `logMessage` when it has one); a bug's details go to the log only.
 */
export function errorAnswer(error: unknown, request: { id: string; url: string; log: ErrorLog }, options: ErrorAnswerOptions = {}) {
  const { appError, unexpected } = toAppError(error, request.id);
  logAppError(request.log, error, appError, unexpected, options);
  const rendered = renderError(appError, errorFormatFor(request.url));
  const body = (options.openAi ?? isOpenAiUrl(request.url)) ? withOpenAiError(rendered.status, rendered.body) : rendered.body;
  return { appError, unexpected, rendered: { ...rendered, body } };
}

function logAppError(log: ErrorLog, error: unknown, appError: AppError, unexpected: boolean, options: ErrorAnswerOptions): void {
  const fields = options.fields ?? {};
  // `reason`, not `msg`: pino writes the message as `msg` too, and a JSON reader keeps the last.
  const reason = appError.logMessage ?? appError.message;
  if (isDatabaseUnavailable(error)) {
    // One readable line: the driver's error object holds the whole (circular) topology.
    log.warn({ ...fields, dbError: describeError(error) }, options.failed ?? 'database unavailable: answered 503');
  } else if (unexpected || appError.httpStatus >= 500) {
    // A refusal whose message may quote a secret logs its logMessage, not itself.
    const detail = isAppError(error) && error.logMessage ? { statusText: appError.statusText, reason } : { err: error };
    log.error({ ...fields, ...detail }, options.failed ?? (unexpected ? 'unexpected error' : reason));
  } else log.info({ ...fields, statusText: appError.statusText, reason }, options.refused ?? 'request refused');
}

/** `Invalid field 'parentId': expected string (and 2 more)`; an empty path is the request itself. */
function invalidField(path: string, message: string, issueCount: number): string {
  const more = issueCount > 1 ? ` (and ${issueCount - 1} more)` : '';
  return `Invalid field '${path || 'request'}': ${message}${more}`;
}

/** Names the field at fault, e.g. `Invalid field 'parentId': expected string`. */
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'Invalid request';
  return invalidField(issue.path.join('.'), issue.message, error.issues.length);
}

/** The router's `maxParamLength`: a longer path parameter never reaches a route. */
export const MAX_PATH_PARAM_LENGTH = 500;

/** Messages of the multipart parser (busboy/dicer) for a body that is cut short or malformed. */
const BROKEN_MULTIPART = [
  /^Unexpected end of (multipart data|form)$/,
  /^\w+ terminated early due to unexpected end of multipart data$/,
  /^Multipart: Boundary not found$/,
  /^Malformed part header$/,
  /^Unsupported Content-Type\.$/,
];

/**
 * A request body that ended early or is not the multipart it claims to be: a client mistake
 * (a truncated upload, a dropped connection), never a server fault. Null for anything else.
 */
function truncatedBodyMessage(error: FastifyLikeError): string | null {
  const message = error.message ?? '';
  if (error.code === 'ERR_STREAM_PREMATURE_CLOSE') return 'Invalid request body: it ended before it was complete (truncated upload?)';
  if (error.code === 'ECONNRESET' && message === 'aborted') return 'Invalid request body: the client aborted the request before sending all of it';
  if (!error.code && BROKEN_MULTIPART.some((pattern) => pattern.test(message))) return `Invalid multipart body: ${message}`;
  return null;
}

interface FastifyLikeError {
  code?: string;
  statusCode?: number;
  message?: string;
}

/**
 * Turns anything thrown into an AppError. Client mistakes that Fastify detects (bad JSON,
 * wrong content type, oversized body) keep their 4xx status; a database outage is a 503 with
 * Retry-After; anything unknown becomes a 500 whose details stay in the log.
 */
export function toAppError(error: unknown, requestId: string): { appError: AppError; unexpected: boolean } {
  if (isAppError(error)) return { appError: error, unexpected: false };
  // An outage is neither a bug (500) nor the caller's fault: 503, whatever the query was.
  if (isDatabaseUnavailable(error)) return { appError: Errors.databaseUnavailable(), unexpected: false };
  if (error instanceof LockLostError) return { appError: Errors.changeInterrupted(), unexpected: true };
  if (error instanceof z.ZodError) return { appError: Errors.missingParams(describeZodError(error)), unexpected: false };
  const fastifyError = (error ?? {}) as FastifyLikeError;
  if (hasZodFastifySchemaValidationErrors(error)) {
    // A route's zod schema refused a request part (every route schema is zod): named as a zod
    // error thrown in a handler would be.
    const [first] = error.validation;
    const message = invalidField(first?.instancePath.slice(1).replaceAll('/', '.') ?? '', first?.message ?? 'invalid', error.validation.length);
    return { appError: Errors.missingParams(message), unexpected: false };
  }
  const truncated = truncatedBodyMessage(fastifyError);
  if (truncated) return { appError: Errors.missingParams(truncated), unexpected: false };
  switch (fastifyError.code) {
    // The router's refusals (app.ts `frameworkErrors`). No stored name is that long.
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { appError: Errors.notFound(`Not found: a path parameter is longer than ${MAX_PATH_PARAM_LENGTH} characters`), unexpected: false };
    case 'FST_ERR_BAD_URL':
      return { appError: Errors.missingParams('Invalid URL: a path parameter is not valid percent-encoding'), unexpected: false };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { appError: Errors.unsupportedMediaType(fastifyError.message ?? 'Unsupported content type'), unexpected: false };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return { appError: Errors.payloadTooLarge('Request body is too large'), unexpected: false };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
    case 'FST_INVALID_JSON_FIELD_ERROR':
    case 'FST_PROTO_VIOLATION':
      return { appError: Errors.missingParams(`Invalid request body: ${fastifyError.message ?? 'unreadable'}`), unexpected: false };
    default:
      break;
  }
  // A model provider that failed (refused, unreachable, timed out, answered nonsense): the
  // service is a gateway to it here, whichever route called it (search, data writes, chat).
  if (error instanceof ProviderReplyError || error instanceof LlmError || isProviderError(error)) return { appError: gatewayError(error), unexpected: false };
  // A body parser's error carries 400 (Fastify sets it); a SyntaxError without one is the
  // server's own (a damaged stored snapshot, journal entry or node): a 500 like any other bug.
  if (fastifyError.statusCode === 400 && fastifyError.message) {
    return { appError: Errors.missingParams(`Invalid request: ${fastifyError.message}`), unexpected: false };
  }
  if (fastifyError.statusCode === 413) return { appError: Errors.payloadTooLarge(), unexpected: false };
  if (fastifyError.statusCode === 415) return { appError: Errors.unsupportedMediaType(), unexpected: false };
  return { appError: Errors.internal(requestId), unexpected: true };
}
