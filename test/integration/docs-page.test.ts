import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * The docs page in a real browser: Debian's Chromium driven by playwright-core. scripts/test.mjs
 * installs Chromium when it is missing; without it this test fails (it never skips).
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Flags for a closed network: no background connections, no first-run or sync traffic.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let t: TestApp;
let baseUrl: string;
let profile: string;
let browser: BrowserContext | undefined;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM}: run \`npm test\` (it installs Debian's chromium) or \`apt-get install -y chromium\``);
  }
  t = await buildTestApp();
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  profile = mkdtempSync(join(tmpdir(), 'docs-chromium-'));
  browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe('GET /docs in a browser', () => {
  it('loads Swagger UI over /openapi.json and shows the chat completions and OAuth token operations', async () => {
    const page = await browser!.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    const fetched: string[] = [];
    page.on('response', (response) => fetched.push(`${response.status()} ${new URL(response.url()).pathname}`));

    const response = await page.goto(`${baseUrl}/docs`);
    expect(response?.status()).toBe(200);
    const completions = page.locator('.opblock-summary-path', { hasText: /^\/api\/v1\/chat\/completions$/ });
    const token = page.locator('.opblock-summary-path', { hasText: /^\/oauth\/token$/ });
    await completions.first().waitFor({ timeout: 30_000 });
    await token.first().waitFor({ timeout: 30_000 });
    expect(await completions.count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator('.opblock-post .opblock-summary-path', { hasText: /^\/oauth\/token$/ }).count()).toBe(1);
    // The document came from /openapi.json; the page broke no CSP rule and threw nothing.
    expect(fetched).toContain('200 /openapi.json');
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it('gives only the docs routes the page CSP; the API keeps default-src none', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs' });
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    for (const url of ['/healthz', '/openapi.json', '/api/core/app/list', '/metrics']) {
      const response = await t.app.inject({ method: 'GET', url });
      expect(response.headers['content-security-policy'], url).toBe("default-src 'none';frame-ancestors 'none'");
    }
  });
});
