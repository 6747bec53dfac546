import { describe, expect, it, vi } from 'vitest';
import { MongoNetworkError } from 'mongodb';
import { z } from 'zod';
import { Errors } from '../../src/infra/errors.js';
import { errorAnswer, errorFormatFor, openAiErrorType, platformErrorBody, renderError, toAppError, withOpenAiError } from '../../src/infra/error-render.js';
import { urlForMessage } from '../../src/infra/join-url.js';
import { LockLostError } from '../../src/infra/mongo-lock.js';
import { redactUrl } from '../../src/infra/logger.js';

describe('errorFormatFor', () => {
  it.each([
    ['/api/core/app/list', 'platform'],
    ['/oauth/token', 'oauth'],
    ['/oauth', 'oauth'],
    ['/kapis/resources.platform.io/v1alpha3/nodes', 'k8s'],
    ['/kapis?x=1', 'k8s'],
    ['/nothing', 'platform'],
    ['/oauthx', 'platform'],
  ])('%s renders as %s', (url, format) => {
    expect(errorFormatFor(url)).toBe(format);
  });
});

describe('renderError', () => {
  it('renders the platform envelope with the honest status', () => {
    const rendered = renderError(Errors.appUnExist('App 1 not found'), 'platform');
    expect(rendered.status).toBe(404);
    expect(rendered.body).toEqual({ code: 502000, statusText: 'appUnExist', message: 'App 1 not found', data: null });
  });

  it('renders OAuth errors, omitting an empty description', () => {
    expect(renderError(Errors.oauth(400, 'unsupported_grant_type'), 'oauth').body).toEqual({ error: 'unsupported_grant_type' });
    expect(renderError(Errors.oauth(401, 'invalid_client', 'invalid client credential'), 'oauth')).toMatchObject({
      status: 401,
      body: { error: 'invalid_client', error_description: 'invalid client credential' },
    });
  });

  it('maps generic errors to OAuth names by status', () => {
    expect(renderError(Errors.unsupportedMediaType('json is not accepted'), 'oauth').body).toEqual({
      error: 'invalid_request',
      error_description: 'json is not accepted',
    });
    expect(renderError(Errors.internal('r1'), 'oauth').body.error).toBe('server_error');
  });

  it('renders Kubernetes Status bodies', () => {
    const rendered = renderError(Errors.k8s(401, 'Unauthorized', 'token is expired'), 'k8s');
    expect(rendered).toMatchObject({
      status: 401,
      body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'token is expired', reason: 'Unauthorized', code: 401 },
    });
    expect(renderError(Errors.routeNotFound('GET', '/kapis/x'), 'k8s').body.reason).toBe('NotFound');
  });

  it('carries extra headers', () => {
    expect(renderError(Errors.tooManyRequest('slow down', 600), 'platform').headers).toEqual({ 'retry-after': '600' });
  });
});

describe('withOpenAiError', () => {
  it.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [413, 'invalid_request_error'],
    [429, 'rate_limit_error'],
    [500, 'server_error'],
    [502, 'server_error'],
    [503, 'server_error'],
  ])('names status %i %s', (status, type) => {
    expect(openAiErrorType(status)).toBe(type);
  });

  it("adds OpenAI's error object beside the envelope, code the statusText or null", () => {
    const refused = Errors.unAuthApiKey('The API key is not valid');
    expect(withOpenAiError(401, platformErrorBody(refused))).toEqual({
      code: 514,
      statusText: 'unAuthApiKey',
      message: 'The API key is not valid',
      data: null,
      error: { message: 'The API key is not valid', type: 'authentication_error', code: 'unAuthApiKey' },
    });
    expect(withOpenAiError(500, platformErrorBody(Errors.internal('r1')))).toMatchObject({ error: { message: 'Internal error (request id r1)', type: 'server_error', code: null } });
  });

  it('leaves success bodies and bodies that are not the envelope as they are', () => {
    const answer = { object: 'list', data: [] };
    expect(withOpenAiError(200, { code: 200, statusText: '', message: '', data: 'text' })).toEqual({ code: 200, statusText: '', message: '', data: 'text' });
    expect(withOpenAiError(400, answer)).toBe(answer);
    expect(withOpenAiError(400, 'plain text')).toBe('plain text');
    expect(withOpenAiError(400, null)).toBeNull();
  });
});

describe('toAppError', () => {
  it('answers a lost lock as a 503 with Retry-After (the change is finished elsewhere), logged as unexpected', () => {
    const { appError, unexpected } = toAppError(new LockLostError('tree:team', 'taken over'), 'r');
    expect(appError.httpStatus).toBe(503);
    expect(appError.headers).toEqual({ 'retry-after': '5' });
    expect(appError.message).toMatch(/finished by another process/);
    expect(unexpected).toBe(true);
  });

  it('names the zod field at fault', () => {
    const result = z.object({ appId: z.string() }).safeParse({ appId: 3 });
    const { appError } = toAppError(result.error, 'r');
    expect(appError.httpStatus).toBe(400);
    expect(appError.statusText).toBe('missingParams');
    expect(appError.message).toMatch(/appId/);
  });

  it.each([
    ['FST_ERR_CTP_INVALID_MEDIA_TYPE', 415],
    ['FST_ERR_CTP_BODY_TOO_LARGE', 413],
    ['FST_ERR_CTP_INVALID_JSON_BODY', 400],
    ['FST_ERR_CTP_EMPTY_JSON_BODY', 400],
  ])('maps Fastify %s to %i', (code, status) => {
    const error = Object.assign(new Error('x'), { code });
    expect(toAppError(error, 'r').appError.httpStatus).toBe(status);
  });

  it('renders the router refusals (framework errors) in the URL format: a too long name is found nowhere', () => {
    const rendered = (error: Error, url: string) => errorAnswer(error, { id: 'r', url, log: silentLog() }).rendered;
    const tooLong = Object.assign(new Error("'/x' is exceeding the max param length"), { code: 'FST_ERR_MAX_PARAM_LENGTH', statusCode: 414 });
    expect(rendered(tooLong, '/kapis/resources.platform.io/v1alpha3/nodes/aaa')).toMatchObject({
      status: 404,
      body: { kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 },
    });
    expect(rendered(tooLong, '/api/support/outLink/imA/aaa')).toMatchObject({ status: 404, body: { code: 404, statusText: 'notFound', data: null } });
    const badUrl = Object.assign(new Error("'/x' is not a valid url component"), { code: 'FST_ERR_BAD_URL', statusCode: 400 });
    expect(rendered(badUrl, '/api/system/img/%E0')).toMatchObject({ status: 400, body: { statusText: 'missingParams', data: null } });
    expect(rendered(badUrl, '/kapis/x/%E0').body).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
  });

  it("is a 500 for a SyntaxError of the server's own (a damaged stored document), not a 400 echoing the parser", () => {
    let damaged: unknown;
    try {
      JSON.parse('{"writes":[');
    } catch (error) {
      damaged = error;
    }
    expect(damaged).toBeInstanceOf(SyntaxError);
    const { appError, unexpected } = toAppError(damaged, 'req-7');
    expect(unexpected).toBe(true);
    expect(appError.httpStatus).toBe(500);
    expect(appError.message).toBe('Internal error (request id req-7)');
  });

  it("keeps a body parser's SyntaxError a 400 (Fastify gives a parser's error the status 400)", () => {
    const parserError = Object.assign(new SyntaxError('Unexpected token } in JSON at position 9'), { statusCode: 400 });
    const { appError, unexpected } = toAppError(parserError, 'r');
    expect(unexpected).toBe(false);
    expect(appError).toMatchObject({ httpStatus: 400, statusText: 'missingParams', message: 'Invalid request: Unexpected token } in JSON at position 9' });
  });

  it('hides unexpected errors behind a 500 with the request id', () => {
    const { appError, unexpected } = toAppError(new Error('secret stack detail'), 'req-42');
    expect(unexpected).toBe(true);
    expect(appError.httpStatus).toBe(500);
    expect(appError.message).toBe('Internal error (request id req-42)');
  });
});

/** A logger recording its calls (level, fields, message). */
function recordingLog() {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const at = (level: string) => (fields: object, message: string) => void lines.push({ level, fields: fields as Record<string, unknown>, message });
  return { log: { info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

function silentLog() {
  return { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
}

describe('errorAnswer (every error answer is logged and rendered here)', () => {
  it('logs a refusal at info with its reason in a field of its own, its logMessage when it has one', () => {
    const { log, lines } = recordingLog();
    errorAnswer(Errors.missingParams('Http url is empty'), { id: 'r', url: '/api/core/chat/chatTest', log }, { refused: 'chat test refused while streaming' });
    errorAnswer(Errors.routeNotFound('GET', '/api/x/secret', '/api/x/[redacted]'), { id: 'r', url: '/api/x/secret', log });
    expect(lines).toEqual([
      { level: 'info', fields: { statusText: 'missingParams', reason: 'Http url is empty' }, message: 'chat test refused while streaming' },
      { level: 'info', fields: { statusText: 'notFound', reason: 'Route GET /api/x/[redacted] not found' }, message: 'request refused' },
    ]);
  });

  it('logs a bug at error with the thrown error, and answers only the request id', () => {
    const { log, lines } = recordingLog();
    const bug = new Error('secret internals');
    const { rendered, unexpected } = errorAnswer(bug, { id: 'req-9', url: '/api/core/app/list', log }, { fields: { code: 'X' } });
    expect(unexpected).toBe(true);
    expect(rendered.body).toEqual({ code: 500, statusText: '', message: 'Internal error (request id req-9)', data: null });
    expect(lines).toEqual([{ level: 'error', fields: { code: 'X', err: bug }, message: 'unexpected error' }]);
  });

  it('logs a database outage as one readable warning (the driver error holds the whole topology), a stream too', () => {
    const { log, lines } = recordingLog();
    const outage = new MongoNetworkError('connect ECONNREFUSED 127.0.0.1:27017');
    const { rendered } = errorAnswer(outage, { id: 'r', url: '/api/v1/chat/completions', log }, { openAi: true, failed: 'chat completion failed while streaming' });
    expect(rendered.status).toBe(503);
    expect(lines).toEqual([{ level: 'warn', fields: { dbError: 'MongoNetworkError: connect ECONNREFUSED 127.0.0.1:27017' }, message: 'chat completion failed while streaming' }]);
  });

  it('adds OpenAI\'s error object under /api/v1/ (or when asked), and to nothing else by default', () => {
    const refused = Errors.unAuthorization('no key');
    expect(errorAnswer(refused, { id: 'r', url: '/api/v1/models', log: silentLog() }).rendered.body).toMatchObject({ error: { message: 'no key', type: 'authentication_error' } });
    expect(errorAnswer(refused, { id: 'r', url: '/api/core/chat/chatTest', log: silentLog() }, { openAi: true }).rendered.body).toHaveProperty('error');
    expect(errorAnswer(refused, { id: 'r', url: '/api/core/app/list', log: silentLog() }).rendered.body).not.toHaveProperty('error');
  });
});

describe('redactUrl', () => {
  it.each([
    ['/a?password=x&b=1', '/a?password=[redacted]&b=1'],
    ['/a?b=1&token=abc', '/a?b=1&token=[redacted]'],
    ['/a?apiKey=fastgpt-1&oldPsw=2&newPsw=3', '/a?apiKey=[redacted]&oldPsw=[redacted]&newPsw=[redacted]'],
    ['/a?client_secret=s', '/a?client_secret=[redacted]'],
    ['/a?name=password', '/a?name=password'],
    // Percent-encoded and differently cased names are the same parameter to the parser.
    ['/a?%74oken=abc&TOKEN=def', '/a?%74oken=[redacted]&TOKEN=[redacted]'],
    ['/a?token=abc#frag', '/a?token=[redacted]#frag'],
    // A channel receiver's path ends with its link token.
    ['/api/support/outLink/feishu/abcdef123?x=1', '/api/support/outLink/feishu/[redacted]?x=1'],
    ['/api/support/outLink/wecom/abc', '/api/support/outLink/wecom/[redacted]'],
    // Channel callbacks: WeChat's signature covers no body, so a logged one could be replayed.
    ['/o?signature=s1&timestamp=1&nonce=2&echostr=e', '/o?signature=[redacted]&timestamp=1&nonce=2&echostr=[redacted]'],
    ['/o?msg_signature=s2&timestamp=1&nonce=2', '/o?msg_signature=[redacted]&timestamp=1&nonce=2'],
  ])('%s → %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });
});

describe('urlForMessage', () => {
  it('keeps scheme, host and path, and drops credentials, query and fragment', () => {
    expect(urlForMessage('https://user:pw@qyapi.example/cgi-bin/gettoken?corpid=c&corpsecret=s#x')).toBe('https://qyapi.example/cgi-bin/gettoken');
    expect(urlForMessage('not a url?secret=1')).toBe('not a url');
  });
});
