// A bare Fastify server in a process of its own, as the service runs: the yardstick then pays the
// same cross-process wake-ups per request and gets a core of its own, instead of sharing the load
// generator's event loop. Usage (from lib.mjs): node bench/baseline-server.mjs <module> <options.json>
// The module's default export `register(app, { db, options })` adds the routes; `options.mongoUri`
// connects `db`. Prints the listening URL as one line on stdout.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import Fastify from 'fastify';
import { MongoClient } from 'mongodb';

const [modulePath, optionsFile] = process.argv.slice(2);
const options = JSON.parse(readFileSync(optionsFile, 'utf8'));
const client = options.mongoUri ? new MongoClient(options.mongoUri) : null;
await client?.connect();
const app = Fastify({ logger: false });
const { default: register } = await import(pathToFileURL(modulePath).href);
await register(app, { db: client?.db(), options });
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${url}\n`);
process.on('SIGTERM', async () => {
  await app.close();
  await client?.close();
  process.exit(0);
});
