import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/infra/logger.js';
import { lazyRequestLogger } from '../../src/infra/request-logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const parent = createLogger(level, stream) as unknown as FastifyBaseLogger;
  let children = 0;
  const counting = new Proxy(parent, {
    get(target, property, receiver) {
      if (property === 'child') {
        return (...args: Parameters<FastifyBaseLogger['child']>) => {
          children += 1;
          return target.child(...args);
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  return { lines, parent: counting, children: () => children };
}

describe('lazyRequestLogger', () => {
  it('builds no pino child while nothing is written at the configured level', () => {
    const { lines, parent, children } = capture('warn');
    const log = lazyRequestLogger(parent, { reqId: 'r-1' }, {});
    log.info('not written');
    log.debug({ a: 1 }, 'not written either');
    expect(lines).toEqual([]);
    expect(children()).toBe(0);
  });

  it('writes what the eager child writes: bindings, redaction, message', () => {
    const { lines, parent, children } = capture('info');
    const log = lazyRequestLogger(parent, { reqId: 'r-2' }, {});
    log.warn({ body: { password: 'hunter2', name: 'x' } }, 'refused');
    log.info('second line');
    expect(children()).toBe(1);
    expect(lines[0]).toMatchObject({ level: 40, reqId: 'r-2', msg: 'refused', body: { password: '[redacted]', name: 'x' } });
    expect(lines[1]).toMatchObject({ level: 30, reqId: 'r-2', msg: 'second line' });
  });

  it("follows a route's own level (logLevel), above or below the service's", () => {
    const quiet = capture('info');
    const quietLog = lazyRequestLogger(quiet.parent, { reqId: 'r-3' }, { level: 'warn' });
    quietLog.info('dropped');
    quietLog.error('kept');
    expect(quiet.lines.map((line) => line.msg)).toEqual(['kept']);
    const verbose = capture('warn');
    const verboseLog = lazyRequestLogger(verbose.parent, { reqId: 'r-4' }, { level: 'debug' });
    verboseLog.debug('kept');
    expect(verbose.lines.map((line) => line.msg)).toEqual(['kept']);
    expect(verboseLog.level).toBe('debug');
  });
});
