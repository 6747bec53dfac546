/**
 * The one error type of the service and its catalogue. Platform codes and statusText keys are
 * the reference registry's (FastGPT 4.8.9); HTTP statuses are the honest ones (docs/decisions.md#envelope).
 * Cluster errors carry their OAuth error name or Kubernetes Status reason for the renderers.
 */
export interface AppErrorInit {
  httpStatus: number;
  code: number;
  statusText: string;
  message: string;
  /** OAuth error name for /oauth responses (e.g. invalid_grant). */
  oauthError?: string;
  /** Kubernetes Status reason for /kapis responses (e.g. Unauthorized). */
  k8sReason?: string;
  /** Kubernetes Status `details` (e.g. group, kind, name of the refused resource). */
  k8sDetails?: Record<string, string>;
  /** Extra headers to send with the error (e.g. Retry-After). */
  headers?: Record<string, string>;
  /** What the log says instead of `message`, when the message quotes input that may be a secret. */
  logMessage?: string;
}

export class AppError extends Error {
  readonly httpStatus: number;
  readonly code: number;
  readonly statusText: string;
  readonly oauthError?: string;
  readonly k8sReason?: string;
  readonly k8sDetails?: Record<string, string>;
  readonly headers?: Record<string, string>;
  readonly logMessage?: string;

  constructor(init: AppErrorInit) {
    super(init.message);
    this.name = 'AppError';
    this.httpStatus = init.httpStatus;
    this.code = init.code;
    this.statusText = init.statusText;
    this.oauthError = init.oauthError;
    this.k8sReason = init.k8sReason;
    this.k8sDetails = init.k8sDetails;
    this.headers = init.headers;
    this.logMessage = init.logMessage;
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}

/** How long clients are asked to wait before retrying during a database outage. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

const make = (httpStatus: number, code: number, statusText: string) => (message: string) =>
  new AppError({ httpStatus, code, statusText, message });

/** A 503 the client should send again after `retryAfterSeconds` (Retry-After): an outage or a process closing, not its fault. */
const unavailable = (message: string, retryAfterSeconds: number, more: Pick<AppErrorInit, 'oauthError' | 'headers'> = {}) =>
  new AppError({
    httpStatus: 503,
    code: 503,
    statusText: 'serviceUnavailable',
    message,
    oauthError: more.oauthError,
    headers: { 'retry-after': String(retryAfterSeconds), ...more.headers },
  });

/** The catalogue. Each entry takes the readable message naming what is at fault. */
export const Errors = {
  // Base
  unAuthorization: (message = 'Missing or invalid credentials') => make(401, 403, 'unAuthorization')(message),
  forbidden: (message = 'Not allowed') => make(403, 403, 'unAuthorization')(message),
  unAuthApiKey: (message = 'The API key is not valid') => make(401, 514, 'unAuthApiKey')(message),
  tooManyRequest: (message = 'Too many requests, try again later', retryAfterSeconds?: number) =>
    new AppError({
      httpStatus: 429,
      code: 429,
      statusText: 'tooManyRequest',
      message,
      headers: retryAfterSeconds ? { 'retry-after': String(retryAfterSeconds) } : undefined,
    }),
  notFound: (message = 'Not found') => make(404, 404, 'notFound')(message),
  /** Outbound HTTP to a user-given URL: refused by the SSRF guard, or the target took too long. */
  urlNotAllowed: make(400, 400, 'urlNotAllowed'),
  gatewayTimeout: make(504, 504, 'gatewayTimeout'),
  /** `loggedUrl`: the URL as the log may show it (a channel receiver's path ends with its link token). */
  routeNotFound: (method: string, url: string, loggedUrl = url) =>
    new AppError({ httpStatus: 404, code: 404, statusText: 'notFound', message: `Route ${method} ${url} not found`, logMessage: `Route ${method} ${loggedUrl} not found` }),
  payloadTooLarge: (message = 'Request body is too large') => make(413, 413, 'payloadTooLarge')(message),
  unsupportedMediaType: (message = 'Unsupported content type') => make(415, 415, 'unsupportedMediaType')(message),
  conflict: (message: string) => make(409, 409, 'conflict')(message),
  /** A request body in a content coding this service does not decode (RFC 9110: 415 naming the accepted coding). */
  contentEncodingRefused: (encoding: string) =>
    new AppError({
      httpStatus: 415,
      code: 415,
      statusText: 'unsupportedMediaType',
      message: `Content-Encoding ${encoding.slice(0, 40)} is not supported: send the request body uncompressed`,
      headers: { 'accept-encoding': 'identity' },
    }),
  /** Requests the HTTP parser refused before any route saw them (plugins/client-errors.ts). */
  requestTimeout: (message = 'The request was not received in time') => make(408, 408, 'requestTimeout')(message),
  headersTooLarge: (message = 'The request headers are too large') => make(431, 431, 'requestHeaderFieldsTooLarge')(message),
  internal: (requestId?: string) =>
    make(500, 500, '')(requestId ? `Internal error (request id ${requestId})` : 'Internal error'),
  badGateway: (message: string, headers?: Record<string, string>) => new AppError({ httpStatus: 502, code: 502, statusText: 'badGateway', message, headers }),
  /**
   * The database cannot be reached or cannot serve now (an outage, not the caller's fault): 503
   * with Retry-After, so clients wait and retry instead of treating it as a bug or a logout.
   */
  databaseUnavailable: (retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS) =>
    unavailable(`The service is temporarily unavailable: its database cannot be reached. Try again in ${retryAfterSeconds} seconds`, retryAfterSeconds, {
      oauthError: 'temporarily_unavailable',
    }),

  /**
   * This process lost a lock it held while changing something (it stalled, or the database did):
   * another process finishes the journaled change. 503: not a bug, and the caller should look
   * at the result before trying again.
   */
  changeInterrupted: (retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS) =>
    unavailable(`The change was interrupted and is being finished by another process; check the result in ${retryAfterSeconds} seconds before trying again`, retryAfterSeconds),

  /**
   * Something shared kept changing under every attempt of this request (other processes' writes
   * to it): nothing was decided here. 503, to be tried again shortly.
   */
  contended: (what: string, retryAfterSeconds = 1) => unavailable(`${what} kept changing while this request used it; try again in ${retryAfterSeconds} seconds`, retryAfterSeconds),

  /** This process is closing: a request that must not be half-done here is refused, to be sent again elsewhere. */
  shuttingDown: () => unavailable('This process is shutting down: send the request again', 1, { headers: { connection: 'close' } }),

  // Team (500000)
  teamOverSize: make(403, 500000, 'teamOverSize'),
  unAuthTeam: (message = 'No permission to operate this team') => make(403, 500001, 'unAuthTeam')(message),
  aiPointsNotEnough: make(403, 500002, 'aiPointsNotEnough'),
  datasetSizeNotEnough: make(403, 500003, 'datasetSizeNotEnough'),
  datasetAmountNotEnough: make(403, 500004, 'datasetAmountNotEnough'),
  appAmountNotEnough: make(403, 500005, 'appAmountNotEnough'),
  pluginAmountNotEnough: make(403, 500006, 'pluginAmountNotEnough'),
  websiteSyncNotEnough: make(429, 500007, 'websiteSyncNotEnough'),
  reRankNotEnough: make(403, 500008, 'reRankNotEnough'),

  // Dataset (501000)
  unExistDataset: (message = 'Dataset not found') => make(404, 501000, 'unExistDataset')(message),
  unAuthDataset: (message = 'No permission for this dataset') => make(403, 501001, 'unAuthDataset')(message),
  unAuthDatasetCollection: (message = 'No permission for this collection') => make(403, 501002, 'unAuthDatasetCollection')(message),
  unAuthDatasetData: (message = 'No permission for this data item') => make(403, 501003, 'unAuthDatasetData')(message),
  unAuthDatasetFile: (message = 'No permission for this file') => make(403, 501004, 'unAuthDatasetFile')(message),
  /** A missing collection or data item: the reference's keys, with an honest 404. */
  collectionNotFound: (id: string) => make(404, 501002, 'unAuthDatasetCollection')(`Collection ${id} not found`),
  dataNotFound: (id: string) => make(404, 501003, 'unAuthDatasetData')(`Data ${id} not found`),
  unCreateCollection: make(400, 501005, 'unCreateCollection'),
  unLinkCollection: make(400, 501006, 'unLinkCollection'),
  invalidVectorModelOrQAModel: make(400, 501007, 'invalidVectorModelOrQAModel'),

  // App (502000)
  appUnExist: (message = 'App not found') => make(404, 502000, 'appUnExist')(message),
  unAuthApp: (message = 'No permission for this app') => make(403, 502001, 'unAuthApp')(message),
  invalidOwner: make(400, 502002, 'invalidOwner'),
  invalidAppType: make(400, 502003, 'invalidAppType'),

  // User (503000)
  unAuthUser: (message = 'The user cannot be found') => make(401, 503000, 'unAuthUser')(message),
  binVisitor: (message = 'You are a visitor') => make(403, 503002, 'binVisitor')(message),
  balanceNotEnough: make(403, 503003, 'balanceNotEnough'),

  // Chat (504000)
  unAuthChat: (message = 'No permission for this chat') => make(403, 504000, 'unAuthChat')(message),

  // Share links (505000)
  outlinkUnExist: (message = 'Share link not found') => make(404, 505000, 'outlinkUnExist')(message),
  unAuthLink: (message = 'No permission for this share link') => make(403, 505001, 'unAuthLink')(message),
  linkUnInvalid: (message = 'The share link is invalid') => make(403, 501, 'linkUnInvalid')(message),

  // API keys (506000)
  openapiUnExist: (message = 'API Key does not exist') => make(404, 506000, 'openapiUnExist')(message),
  openapiUnAuth: (message = 'No permission to operate this API Key') => make(403, 506001, 'openapiUnAuth')(message),
  openapiExceedLimit: (message = 'Up to 10 sets of API keys') => make(403, 506002, 'openapiExceedLimit')(message),
  appBoundKeyRefused: (appId: string) =>
    make(403, 506001, 'openapiUnAuth')(
      `This API key is bound to app ${appId}: it may only call that app's chat routes (completions, histories, records, feedback). Use a global API key or log in for this endpoint`,
    ),

  // Common (507000)
  fileNotFound: (message = 'File not found') => make(404, 507000, 'fileNotFound')(message),
  unAuthFile: (message = 'No permission for this file') => make(403, 507001, 'unAuthFile')(message),
  missingParams: (message: string) => make(400, 507002, 'missingParams')(message),
  inheritPermissionError: (message = 'Cannot change inherited permission here') => make(400, 507003, 'inheritPermissionError')(message),

  // Plugin (508000), System (509000)
  pluginUnExist: (message = 'Plugin not found') => make(404, 508000, 'pluginUnExist')(message),
  pluginUnAuth: (message = 'No permission for this plugin') => make(403, 508001, 'pluginUnAuth')(message),
  communityVersionNumLimit: make(403, 509000, 'communityVersionNumLimit'),

  /** An OAuth 2 error for /oauth routes; `description` is omitted from the body when empty. */
  oauth: (httpStatus: number, error: string, description = '', headers?: Record<string, string>) =>
    new AppError({ httpStatus, code: httpStatus, statusText: error, message: description, oauthError: error, headers }),

  /** A Kubernetes Status error for /kapis routes. */
  k8s: (httpStatus: number, reason: string, message: string, details?: Record<string, string>) =>
    new AppError({ httpStatus, code: httpStatus, statusText: reason, message, k8sReason: reason, k8sDetails: details }),

  // Identity refusals (appended; statuses and codes as the reference answers them)
  /**
   * A refusal that is not about the session itself (disabled account, wrong old password): the
   * reference answers these with a plain message (code 500); code 403 would make its web client
   * log the user out.
   */
  accountRefused: (message: string) => make(403, 500, '')(message),
  apiKeyExpired: (expiredTime: Date) => make(401, 506001, 'openapiUnAuth')(`The API key expired at ${expiredTime.toISOString()}`),
  apiKeyUsedUp: (maxUsagePoints: number) => make(403, 506001, 'openapiUnAuth')(`The API key has used all of its ${maxUsagePoints} usage points`),
  /** The website-sync interval of the team plan has not passed (429 with Retry-After). */
  websiteSyncTooSoon: (message: string, retryAfterSeconds: number) =>
    new AppError({ httpStatus: 429, code: 500007, statusText: 'websiteSyncNotEnough', message, headers: { 'retry-after': String(retryAfterSeconds) } }),

  // Chat credentials and routes: the reference's codes, with the statuses these cases answer
  /** core/chat/init without an app (the reference answers code 501). */
  noAppYet: (message = "You don't have an app yet (missing field 'appId')") => make(400, 501, 'missingParams')(message),
  /** A team-space token that is refused or cannot be checked: an invalid credential (401). */
  teamTokenRefused: make(401, 500001, 'unAuthTeam'),
  /** A messaging-channel callback whose token is not a link of that channel: an invalid credential (401). */
  channelLinkRefused: make(401, 505001, 'unAuthLink'),
} as const;

/** The cluster API's named errors (OAuth bodies on /oauth, Kubernetes Status on /kapis). */
export const ClusterErrors = {
  /** A bearer or Basic credential that is not acceptable; `why` is the reference's reason text. */
  unauthorized: (why: string) => Errors.k8s(401, 'Unauthorized', `Unauthorized: ${why}`),
  /** An anonymous caller on a node route, in the reference's words. */
  nodesForbidden: (group: string, verb: 'list' | 'get', name?: string) =>
    Errors.k8s(
      403,
      'Forbidden',
      `${name === undefined ? `nodes.${group}` : `nodes.${group} "${name}"`} is forbidden: User "system:anonymous" cannot ${verb} resource "nodes" in API group "${group}" at the cluster scope`,
      name === undefined ? { group, kind: 'nodes' } : { name, group, kind: 'nodes' },
    ),
  nodeNotFound: (name: string, group: string) => Errors.k8s(404, 'NotFound', `node "${name}" not found`, { name, group, kind: 'nodes' }),
  oauthInvalidGrant: (description: string, httpStatus = 400) => Errors.oauth(httpStatus, 'invalid_grant', description),
  oauthInvalidClient: (description: string) => Errors.oauth(401, 'invalid_client', description),
  /** A form body Go's decoding refuses: the reference's text quotes the bad escape, which may be part of a password. */
  oauthMalformedForm: (description: string) =>
    new AppError({ httpStatus: 401, code: 401, statusText: 'invalid_client', message: description, oauthError: 'invalid_client', logMessage: 'malformed form body (its escape is not logged)' }),
  oauthUnsupportedGrantType: () => Errors.oauth(400, 'unsupported_grant_type'),
  oauthInvalidRequest: (description: string) => Errors.oauth(400, 'invalid_request', description),
  /** The node paths answer only GET and HEAD (go-restful's 405 for another method on a known path). */
  nodesMethodNotAllowed: () =>
    new AppError({
      httpStatus: 405,
      code: 405,
      statusText: 'MethodNotAllowed',
      message: 'the server does not allow this method on the requested resource',
      k8sReason: 'MethodNotAllowed',
      headers: { allow: 'GET, HEAD' },
    }),
  /** /oauth/token answers only POST. */
  oauthMethodNotAllowed: () =>
    new AppError({ httpStatus: 405, code: 405, statusText: 'methodNotAllowed', message: 'Method Not Allowed', oauthError: 'invalid_request', headers: { allow: 'POST' } }),
} as const;
