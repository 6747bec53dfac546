import { buildApp } from './app.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { createLogger } from './infra/logger.js';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
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

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
