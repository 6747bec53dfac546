import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type LevelName = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** pino's level numbers (a custom level set is not used here). */
const LEVELS: Record<string, number> = { fatal: 60, error: 50, warn: 40, info: 30, debug: 20, trace: 10, silent: Number.POSITIVE_INFINITY };

/**
 * A request's logger that becomes a real pino child (with the request id and the route's level)
 * only when something is logged at a level it writes. Fastify builds one child per request, and
 * with redaction a pino child costs more than most hot routes' own work; most requests log
 * nothing at the configured level. What is written is exactly what the eager child would write.
 */
class LazyRequestLogger {
  private real: FastifyBaseLogger | undefined;
  private readonly threshold: number;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {
    this.threshold = LEVELS[options.level ?? parent.level] ?? LEVELS.info!;
  }

  private materialised(): FastifyBaseLogger {
    this.real ??= this.parent.child(this.bindings, this.options);
    return this.real;
  }

  get level(): string {
    return this.real?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.materialised().level = level;
  }

  private write(level: LevelName, args: unknown[]): void {
    if (this.real === undefined && LEVELS[level]! < this.threshold) return;
    (this.materialised()[level] as (...values: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.materialised().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: the per-request logger, made real on its first written line. */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyRequestLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}
