import { MongoError } from 'mongodb';
import pino, { type DestinationStream, type Logger } from 'pino';
import { databaseErrorFields } from './database-errors.js';

/** Field names whose values are secrets wherever they appear in a logged object. */
const SECRET_FIELDS = [
  'password',
  'oldPsw',
  'newPsw',
  'psw',
  'token',
  'access_token',
  'refresh_token',
  'client_secret',
  'apiKey',
  'apikey',
  'key',
  'secret',
  'rootkey',
  'teamToken',
  'authorization',
  'cookie',
];

const SECRET_HEADERS = ['authorization', 'cookie', 'token', 'rootkey', 'set-cookie', 'x-api-key', 'proxy-authorization'];

export const redactPaths: string[] = [
  ...SECRET_HEADERS.map((name) => `req.headers["${name}"]`),
  ...SECRET_HEADERS.map((name) => `res.headers["${name}"]`),
  ...SECRET_FIELDS.flatMap((name) => [name, `*.${name}`, `*.*.${name}`, `*.*.*.${name}`]),
];

/**
 * Query parameters masked in logged URLs, compared lower-cased and percent-decoded (`%74oken` is
 * `token`). The messaging channels' callbacks sign their query string (WeChat's `signature` covers
 * no body), and WeCom's `echostr` is the ciphertext of its answer.
 */
const SECRET_QUERY_NAMES = new Set(
  [...SECRET_FIELDS, 'outLinkUid', 'shareId', 'corpsecret', 'signature', 'msg_signature', 'echostr'].map((name) => name.toLowerCase()),
);

/** A messaging channel's receiver path ends with its link token, the only credential of some channels. */
const CHANNEL_TOKEN_PATH = /(\/support\/outLink\/(?:feishu|wecom|offiaccount|imA|imB|imC)\/)[^/?#]+/gi;

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
}

/** Masks secret query parameters (GET forms of login and key routes carry them) and channel link tokens. */
export function redactUrl(url: string): string {
  const [beforeHash = '', ...hash] = url.split('#');
  const queryAt = beforeHash.indexOf('?');
  const path = (queryAt === -1 ? beforeHash : beforeHash.slice(0, queryAt)).replace(CHANNEL_TOKEN_PATH, '$1[redacted]');
  if (queryAt === -1) return [path, ...hash].join('#');
  const query = beforeHash
    .slice(queryAt + 1)
    .split('&')
    .map((part) => {
      const equals = part.indexOf('=');
      return equals !== -1 && SECRET_QUERY_NAMES.has(decodedName(part.slice(0, equals))) ? `${part.slice(0, equals)}=[redacted]` : part;
    })
    .join('&');
  return [`${path}?${query}`, ...hash].join('#');
}

interface LoggedRequest {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      serializers: {
        // Driver errors reference the live topology (circular): log their plain fields only.
        err: (error: unknown) => (error instanceof MongoError ? databaseErrorFields(error) : pino.stdSerializers.err(error as Error)),
        req: (request: LoggedRequest) => ({
          method: request.method,
          url: redactUrl(request.url),
          host: request.host,
          remoteAddress: request.ip,
          remotePort: request.socket?.remotePort,
        }),
      },
      redact: { paths: redactPaths, censor: '[redacted]' },
      base: { service: 'platform-service' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
