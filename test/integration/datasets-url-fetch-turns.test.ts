import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';
import { createUser, login } from '../helpers/platform.js';
import { LINK_READS_PER_TEAM, LINK_REQUESTS_WAITING_PER_TEAM } from '../../src/platform/datasets/files/link-read-turns.js';
import { until } from '../helpers/polling.js';

/**
 * urlFetch requests of one team read their links in turn (files/link-read-turns.ts). Each page is
 * read with a selector, so each is converted in a worker task: the team's few waiting places
 * there (worker-task.ts) were overflowed by concurrent requests, leaving pages empty.
 */
let t: TestApp;
let api: Client;
let teamId: string;
let site: LocalSite;
/** Pages the site was asked for, by path. */
const fetched: string[] = [];
/** While set, pages under /held/ are answered only once it resolves. */
let held: Promise<void> | undefined;

beforeAll(async () => {
  site = await startLocalSite(async (req, res) => {
    fetched.push(req.url ?? '');
    if (req.url?.startsWith('/held/')) await held;
    res.setHeader('content-type', 'text/html');
    res.end(`<html><head><title>Page ${req.url}</title></head><body><nav>menu</nav><main><p>Content of ${req.url}.</p></main></body></html>`);
  });
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  ({ teamId } = await createUser(t, { username: 'fetch-user', password: 'password-f1' }));
  api = client(t, await login(t, 'fetch-user', 'password-f1'));
});

afterAll(async () => {
  await t?.close();
  await site?.close();
});

const links = (prefix: string, count = 20) => Array.from({ length: count }, (_, i) => `${site.url}/${prefix}/${i}`);
const urlFetch = (urlList: string[], selector?: string) => api.post('/common/tools/urlFetch', { urlList, selector });


describe('urlFetch requests of one team wait their turn', () => {
  // 8 links each, not 20: each conversion starts a worker (about a second here); three requests
  // reading 4 at once already need 12 conversions at a time, past the team's places.
  it('three concurrent requests of many links all answer every page', async () => {
    fetched.length = 0;
    const lists = ['a', 'b', 'c'].map((prefix) => links(prefix, 8));
    const responses = await Promise.all(lists.map((list) => urlFetch(list, 'main')));
    for (const [n, response] of responses.entries()) {
      expect(response.status).toBe(200);
      const pages = response.body.data as { url: string; content: string }[];
      expect(pages.map((page) => page.url)).toEqual(lists[n]);
      for (const page of pages) expect(page.content).toBe(`Content of ${new URL(page.url).pathname}.`);
    }
    expect(fetched).toHaveLength(24);
  }, 120_000);

  it('a request past the waiting ones is refused (429) before it reads a link, the others all succeed', async () => {
    fetched.length = 0;
    let release!: () => void;
    held = new Promise((resolve) => {
      release = resolve;
    });
    const reads = t.app.datasets.ctx.linkReads;
    // The first request reads its first links (held by the site); the next ones wait their turn.
    const first = urlFetch(links('held'));
    await until(() => fetched.length === LINK_READS_PER_TEAM);
    const waiting = Array.from({ length: LINK_REQUESTS_WAITING_PER_TEAM }, (_, n) => urlFetch(links(`w${n}`)));
    await until(() => reads.load(teamId).waiting === LINK_REQUESTS_WAITING_PER_TEAM);
    const refused = await urlFetch(links('refused'));
    expect(refused.status).toBe(429);
    expect(refused.body.message).toContain('link reads are waiting');
    expect(fetched.filter((path) => path.startsWith('/refused/'))).toEqual([]);
    // Nothing but the first request's first links was read meanwhile.
    expect(fetched).toHaveLength(LINK_READS_PER_TEAM);
    release();
    held = undefined;
    for (const response of await Promise.all([first, ...waiting])) {
      expect(response.status).toBe(200);
      for (const page of response.body.data as { url: string; content: string }[]) expect(page.content).toContain(`Content of ${new URL(page.url).pathname}.`);
    }
    expect(reads.load(teamId)).toEqual({ reading: 0, waiting: 0 });
  });
});
