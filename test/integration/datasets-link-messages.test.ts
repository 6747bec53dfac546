import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * A link collection's errors name the page by scheme, host and path: a link may carry a token in
 * its query (`?access_token=`), and error messages are answered and logged.
 */
let t: TestApp;
let api: Client;
let site: LocalSite;
let datasetId: string;
/** What the page at /doc answers. */
let page = { status: 200, body: '<html><body><p>Opening hours of the ferry office.</p></body></html>' };

const SECRET = 'LINK-ACCESS-TOKEN-SECRET';

beforeAll(async () => {
  site = await startLocalSite((request, response) => {
    if (!request.url?.startsWith('/doc')) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(page.status, { 'content-type': 'text/html' }).end(page.body);
  });
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  await createUser(t, { username: 'linker', password: 'password-l1' });
  api = client(t, await login(t, 'linker', 'password-l1'));
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Links' }));
});

afterAll(async () => {
  await t?.close();
  await site?.close();
});

/** The message of a refused call: the page named without its query, the secret nowhere (answer or log). */
function expectNamedWithoutQuery(response: { status: number; body: { message: string } }, path: string) {
  expect(response.status).toBe(400);
  expect(response.body.message).toContain(path);
  expect(response.body.message).not.toContain(SECRET);
  expect(t.logs()).not.toContain(SECRET);
}

describe('link collection errors', () => {
  it('a page answering an error status', async () => {
    page = { status: 403, body: 'no' };
    const link = `${site.url}/doc?access_token=${SECRET}-1`;
    expectNamedWithoutQuery(await api.post('/core/dataset/collection/create/link', { datasetId, link }), `${site.url}/doc`);
  });

  it('a page that cannot be fetched', async () => {
    const closed = await startLocalSite(() => undefined);
    await closed.close();
    const link = `${closed.url}/doc?access_token=${SECRET}-2`;
    expectNamedWithoutQuery(await api.post('/core/dataset/collection/create/link', { datasetId, link }), `${closed.url}/doc`);
  });

  it('a page without text at import', async () => {
    page = { status: 200, body: '<html><body></body></html>' };
    const link = `${site.url}/doc?access_token=${SECRET}-3`;
    expectNamedWithoutQuery(await api.post('/core/dataset/collection/create/link', { datasetId, link }), `${site.url}/doc`);
  });

  it('a page without text at a sync', async () => {
    page = { status: 200, body: '<html><body><p>Opening hours of the ferry office.</p></body></html>' };
    const link = `${site.url}/doc?access_token=${SECRET}-4`;
    const { collectionId } = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/link', { datasetId, link }));
    page = { status: 200, body: '<html><body></body></html>' };
    expectNamedWithoutQuery(await api.post('/core/dataset/collection/sync/link', { collectionId }), `${site.url}/doc`);
  });
});
