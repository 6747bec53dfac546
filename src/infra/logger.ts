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

const SECRET_QUERY_PARAMS = new RegExp(`([?&](?:${SECRET_FIELDS.join('|')}|client_secret|outLinkUid|shareId)=)[^&#]*`, 'gi');

/** Masks secret query parameters: GET forms of login and key routes carry them in the URL. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY_PARAMS, '$1[redacted]');
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
