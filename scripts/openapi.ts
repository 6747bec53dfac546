// Writes openapi/openapi.json, generated from the routes' zod schemas (no database needed).
import { writeFileSync } from 'node:fs';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

export async function generateOpenApi(): Promise<string> {
  const app = await buildApp(loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), { startupTasks: false });
  await app.ready();
  const text = `${JSON.stringify(app.swagger(), null, 2)}\n`;
  await app.close();
  return text;
}

if (process.argv[1]?.endsWith('openapi.ts')) {
  writeFileSync('openapi/openapi.json', await generateOpenApi());
  console.log('wrote openapi/openapi.json');
}
