import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';

/**
 * A user's CSS selector over a page the user controls must not freeze the process (the same
 * class as backtracking regular expressions): the conversion runs off the event loop.
 */
let t: TestApp;
let api: Client;
let site: LocalSite;
let siteUrl: string;
let served = 0;

// Deep nesting makes every descendant combinator walk long ancestor chains.
const DEEP_PAGE = `<html><body>${`${'<div>'.repeat(400)}<span>x</span>${'</div>'.repeat(400)}`.repeat(100)}</body></html>`;
const SLOW_SELECTOR = `p ${'* '.repeat(16)}span`;

beforeAll(async () => {
  site = await startLocalSite((_req, res) => {
    served++;
    res.setHeader('content-type', 'text/html');
    res.end(DEEP_PAGE);
  });
  siteUrl = site.url;
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  await createUser(t, { username: 'selector-user', password: 'password-u1' });
  api = client(t, await login(t, 'selector-user', 'password-u1'));
});

afterAll(async () => {
  await t?.close();
  await site?.close();
});

describe('link preview with a costly selector', () => {
  it('/healthz answers while the page is being converted', async () => {
    const order: string[] = [];
    const preview = api.post('/common/file/previewContent', { type: 'link', sourceId: `${siteUrl}/deep`, selector: SLOW_SELECTOR }).then((response) => {
      order.push('preview');
      return response;
    });
    // Once the page is fetched the conversion starts; the process must still answer.
    while (served === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const health = await t.app.inject({ method: 'GET', url: '/healthz' });
    order.push('healthz');
    expect(health.statusCode).toBe(200);
    const response = await preview;
    expect([200, 400]).toContain(response.status);
    expect(order).toEqual(['healthz', 'preview']);
  });
});
