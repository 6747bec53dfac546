import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './infra/logger.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  for (const name of config.generatedSecrets) {
    logger.warn(`${name} is not set: generated a random value for this run (sessions will not survive a restart)`);
  }
  const app = await buildApp(config, { logger });
  const address = await app.listen({ host: config.HOST, port: config.PORT });
  logger.info(`listening on ${address}`);

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info(`${signal} received: closing (finishing in-flight requests)`);
    const forced = setTimeout(() => {
      logger.error('shutdown timed out: exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS);
    forced.unref();
    app.close().then(
      () => {
        logger.info('closed');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'error while closing');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

// A start-up failure is told in one message (a bad setting names its variable); the stack
// only when asked for, as it tells an operator nothing they can act on.
main().catch((error: unknown) => {
  const verbose = ['debug', 'trace'].includes(process.env.LOG_LEVEL ?? '');
  if (error instanceof ConfigError) console.error(error.message);
  else console.error(verbose ? error : `Start-up failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  process.exit(1);
});
