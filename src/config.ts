import { createHmac, randomBytes } from 'node:crypto';
import net from 'node:net';
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');
const positiveInt = z.coerce.number().int().positive();
const nonNegativeInt = z.coerce.number().int().nonnegative();
/**
 * A timer's length: Node fires a timer of 2^31 ms or more after 1 ms (with a warning), so a huge
 * timeout would act as none at all (a shutdown exiting at once, every outbound call timing out).
 */
const MAX_TIMER_MS = 2 ** 31 - 1;
const durationMs = positiveInt.max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days)`);
/** An http(s) endpoint: a value without a scheme (`localhost:8080/v1`) parses as a URL of scheme `localhost`. */
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' });

const oauthClients = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be JSON' });
      return z.NEVER;
    }
  })
  .pipe(z.array(z.object({ name: z.string().min(1), secret: z.string().min(1) })).min(1));

/** A comma-separated list; blanks around and between items are ignored. */
const commaList = z.string().transform((text) =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean),
);

/** `scheme://host[:port]` exactly, as browsers send in the Origin header. */
const origins = commaList.pipe(
  z.array(
    z.string().refine((text) => {
      try {
        const url = new URL(text);
        return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text.replace(/\/$/, '');
      } catch {
        return false;
      }
    }, 'each item must be an origin such as https://app.example.com (scheme, host and port only)'),
  ),
);

const absoluteHttpUrls = commaList.pipe(
  z.array(
    z.string().refine((text) => {
      try {
        const url = new URL(text);
        return url.protocol === 'http:' || url.protocol === 'https:';
      } catch {
        return false;
      }
    }, 'each item must be an absolute http(s) URL'),
  ),
);

const PROXY_ADDRESS_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const isProxyAddress = (item: string) => {
  const [address = '', bits, extra] = item.split('/');
  if (extra !== undefined || !net.isIP(address)) return PROXY_ADDRESS_NAMES.has(item);
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (net.isIPv4(address) ? 32 : 128));
};

/** Fastify's trustProxy: true/false, a hop count, or the addresses/CIDRs of the trusted proxies. */
/**
 * `true` means one proxy (hop count 1), not Fastify's "believe every X-Forwarded-For entry":
 * the leftmost entry is whatever the client wrote, so the login limits would count attackers'
 * made-up addresses. With one hop the client is the address the proxy itself appended.
 */
const trustProxy = z.string().transform((text, ctx): false | number | string[] => {
  if (/^(true|false)$/.test(text)) return text === 'true' ? 1 : false;
  if (/^\d+$/.test(text)) return Number(text);
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  const bad = items.find((item) => !isProxyAddress(item));
  if (items.length === 0 || bad !== undefined) {
    ctx.addIssue({ code: 'custom', message: `must be true, false, a hop count, or a comma list of proxy addresses/CIDRs${bad ? ` (bad item '${bad}')` : ''}` });
    return z.NEVER;
  }
  return items;
});

/** Every environment variable the service reads. Parsed once, at start-up. */
export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// or mongodb+srv:// URI')
    .default('mongodb://127.0.0.1:27017/platform'),
  BODY_LIMIT_BYTES: positiveInt.default(1024 * 1024),
  /**
   * JSON bodies of v1/chat/completions and v1/embeddings whose headers prove an API key or a login
   * session (20 MiB, the reference's on completions: photos sent inline as data URLs; an SDK's
   * batch of embedding inputs). Everyone else keeps BODY_LIMIT_BYTES.
   */
  API_BODY_LIMIT_BYTES: positiveInt.default(20 * 1024 * 1024),
  UPLOAD_LIMIT_BYTES: positiveInt.default(100 * 1024 * 1024),
  /**
   * Uploads read at once, per process, before their sender is known (share-page and team-space
   * credentials arrive as form fields, after the body): each may hold UPLOAD_LIMIT_BYTES in memory.
   */
  UPLOADS_BEFORE_AUTH_MAX: positiveInt.default(4),
  /**
   * Bytes of chat files and images that share-page and team-space visitors may store in one team
   * within a rolling 24 hours (1 GiB); 0: no bound. Members (session, API key) are not bounded.
   */
  SHARE_UPLOAD_MAX_BYTES_PER_DAY: nonNegativeInt.default(1024 ** 3),
  SHUTDOWN_TIMEOUT_MS: durationMs.default(10_000),
  /** Longest time to receive one request, body included (Node's own default; Fastify's is none). */
  REQUEST_TIMEOUT_MS: durationMs.default(300_000),
  /** Longest time an answer's unsent data may wait for a client that takes none of it; the connection is closed then. */
  RESPONSE_STALL_TIMEOUT_MS: durationMs.default(30_000),
  /** Which proxies' X-Forwarded-* headers to believe (client IP for login limits, https for cookies). */
  TRUST_PROXY: trustProxy.default(false),
  /** Origins whose browser requests may carry the session cookie (CORS with credentials). */
  CORS_ORIGINS: origins.default([]),
  /** Strict-Transport-Security max-age; 0 sends no HSTS header. */
  HSTS_MAX_AGE_SECONDS: nonNegativeInt.default(0),
  /** Always mark the session cookie Secure (otherwise only when the request came over https). */
  COOKIE_SECURE: bool.default(false),
  /** When set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`; unset, it is open. */
  METRICS_TOKEN: z.string().min(16).optional(),

  // Platform API (FastGPT names where it has one)
  TOKEN_KEY: z.string().min(16).optional(),
  ROOT_KEY: z.string().min(16).optional(),
  FILE_TOKEN_KEY: z.string().min(16).optional(),
  DEFAULT_ROOT_PSW: z.string().min(1).optional(),
  MODEL_CONFIG_PATH: z.string().min(1).optional(),
  OPENAI_BASE_URL: httpUrl.optional(),
  CHAT_API_KEY: z.string().optional(),
  SSRF_ALLOW_PRIVATE: bool.default(false),
  /** Team-space tokens are checked by POSTing {teamId, teamToken} here (reply {success, data:{uid}}); unset: team space is refused. */
  TEAM_TOKEN_AUTH_URL: httpUrl.optional(),
  /** The code node's sandbox (FastGPT's fastgpt-sandbox): POST {SANDBOX_URL}/sandbox/js. */
  SANDBOX_URL: httpUrl.optional(),
  OUTBOUND_TIMEOUT_MS: durationMs.default(10_000),
  OUTBOUND_MAX_BYTES: positiveInt.default(5 * 1024 * 1024),
  PLAN_MAX_APPS: positiveInt.default(1000),
  PLAN_MAX_DATASETS: positiveInt.default(1000),
  PLAN_MAX_DATASET_SIZE: positiveInt.default(1_000_000),
  PLAN_EXPORT_INTERVAL_MINUTES: nonNegativeInt.default(0),
  PLAN_WEB_SYNC_INTERVAL_MINUTES: nonNegativeInt.default(0),
  TRAINING_WORKER: bool.default(true),
  /** A training claim's lease: renewed every third of it; a crashed worker's items come back two of these after its last renewal. */
  TRAINING_LOCK_MS: z.coerce.number().int().min(1000).max(600_000).default(15_000),
  /** A messaging-channel turn's lease: renewed every third of it; a stopped process's turn is taken over once it lapsed. */
  CHANNEL_TURN_LEASE_MS: z.coerce.number().int().min(1000).max(600_000).default(60_000),
  /** Messaging-channel turns one process runs at once; a message past it waits, stored, for a free turn here or on another replica. */
  CHANNEL_TURNS_MAX: positiveInt.default(16),
  /** Messaging-channel turns of one link the whole deployment runs at once (its fair share; unset: a quarter of CHANNEL_TURNS_MAX, at least 1; the same on every replica); a message past it waits, stored. */
  CHANNEL_TURNS_PER_LINK: positiveInt.optional(),
  /** How often each process looks for channel turns whose lease lapsed, and runs them. */
  CHANNEL_TURN_SWEEP_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  /** Collections of at most this many items have their data list kept per process (0: none; pages query the database). */
  DATA_LIST_CACHE_ITEMS: nonNegativeInt.default(5000),
  /** Estimated memory of the dataset search indexes one process keeps open (1 GiB); past it the least recently searched are dropped and reopened from MongoDB when next searched. */
  SEARCH_INDEX_MAX_BYTES: positiveInt.default(1024 ** 3),

  // Cluster API (KubeSphere)
  CLUSTER_JWT_SECRET: z.string().min(16).optional(),
  // A longer password could never be used: cluster logins refuse credentials over 256 characters.
  CLUSTER_ADMIN_PASSWORD: z.string().min(1).max(256).optional(),
  OAUTH_CLIENTS: oauthClients.optional(),
  /** Absolute URIs (or origins) /oauth/logout may redirect to besides this service's own host. */
  OAUTH_LOGOUT_REDIRECT_URIS: absoluteHttpUrls.default([]),
  CLUSTER_MULTIPLE_LOGIN: bool.default(true),
  CLUSTER_REGISTER_HOST_NODE: bool.default(true),
  /** How node lists run: in the database, or over the per-process read model (cache; auto = cache). */
  CLUSTER_NODE_QUERY: z.enum(['auto', 'database', 'cache']).default('auto'),
});

export type Env = z.infer<typeof envSchema>;

export interface Config extends Omit<Env, 'TOKEN_KEY' | 'ROOT_KEY' | 'FILE_TOKEN_KEY' | 'CLUSTER_JWT_SECRET' | 'CLUSTER_ADMIN_PASSWORD' | 'OAUTH_CLIENTS'> {
  TOKEN_KEY: string;
  ROOT_KEY: string;
  FILE_TOKEN_KEY: string;
  CLUSTER_JWT_SECRET: string;
  CLUSTER_ADMIN_PASSWORD: string;
  OAUTH_CLIENTS: { name: string; secret: string }[];
  /** Names of secrets that were generated because they were not set (never their values). */
  generatedSecrets: string[];
}

export class ConfigError extends Error {}

const REQUIRED_IN_PRODUCTION = ['TOKEN_KEY', 'ROOT_KEY', 'CLUSTER_JWT_SECRET', 'CLUSTER_ADMIN_PASSWORD'] as const;

/** Parses the environment; throws ConfigError naming every bad variable. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings count as unset, as most shells and compose files produce them.
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const env = parsed.data;
  if (env.NODE_ENV === 'production') {
    const missing = REQUIRED_IN_PRODUCTION.filter((name) => !env[name]);
    if (missing.length > 0) {
      throw new ConfigError(`Invalid configuration:\n  ${missing.map((name) => `${name}: required when NODE_ENV=production`).join('\n  ')}`);
    }
  }
  const generatedSecrets: string[] = [];
  const secret = (name: string, value: string | undefined) => {
    if (value) return value;
    generatedSecrets.push(name);
    return randomBytes(32).toString('hex');
  };
  const tokenKey = secret('TOKEN_KEY', env.TOKEN_KEY);
  return {
    ...env,
    TOKEN_KEY: tokenKey,
    ROOT_KEY: secret('ROOT_KEY', env.ROOT_KEY),
    // Unset, it is derived from TOKEN_KEY rather than drawn at random: every replica (and the
    // next start) must accept the file links another one signed.
    FILE_TOKEN_KEY: env.FILE_TOKEN_KEY ?? createHmac('sha256', tokenKey).update('platform-service file token key').digest('hex'),
    CLUSTER_JWT_SECRET: secret('CLUSTER_JWT_SECRET', env.CLUSTER_JWT_SECRET),
    // The reference's documented default admin password, accepted only outside production.
    CLUSTER_ADMIN_PASSWORD: env.CLUSTER_ADMIN_PASSWORD ?? 'P@88w0rd',
    OAUTH_CLIENTS: env.OAUTH_CLIENTS ?? [{ name: 'kubesphere', secret: 'kubesphere' }],
    generatedSecrets,
  };
}
