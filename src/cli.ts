#!/usr/bin/env node
// Admin commands. Each prints JSON on success and exits non-zero with a message on failure.
//   user create|reset-password, team add-member     (platform accounts)
//   cluster user add|disable|enable|reset-password, cluster nodes|pods import FILE
import { loadConfig } from './config.js';
import { runClusterCommand } from './cli/cluster-commands.js';
import type { CliContext } from './cli/context.js';
import { runPlatformCommand } from './cli/platform-commands.js';
import { createMongo } from './infra/mongo.js';

async function main(argv: string[]): Promise<unknown> {
  const config = loadConfig();
  const { client, db } = createMongo(config.MONGODB_URI);
  await client.connect();
  // Progress goes to stderr: stdout stays the command's JSON result, for scripts.
  const context: CliContext = { config, db, progress: (line) => process.stderr.write(`${line}\n`) };
  try {
    const [group, ...rest] = argv;
    if (group === 'cluster') return await runClusterCommand(rest, context);
    if (group === 'user' || group === 'team') return await runPlatformCommand(argv, context);
    throw new Error(`unknown command '${argv.join(' ')}': expected user, team or cluster`);
  } finally {
    await client.close();
  }
}

main(process.argv.slice(2)).then(
  (result) => {
    console.log(JSON.stringify(result, null, 2));
  },
  (error: unknown) => {
    console.error(`error: ${(error as Error).message}`);
    process.exit(1);
  },
);
