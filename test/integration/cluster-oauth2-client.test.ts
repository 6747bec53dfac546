import * as oauth from 'oauth4webapi';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { cli, fixture } from '../fixtures/cluster/helpers.js';

// A generic, standards-following OAuth 2 client library against the listening server.
let t: TestApp;
let base: string;
let as: oauth.AuthorizationServer;
const client: oauth.Client = { client_id: 'kubesphere' };
const insecure = { [oauth.allowInsecureRequests]: true } as const;

beforeAll(async () => {
  t = await buildTestApp();
  await cli(t.app, ['nodes', 'import', fixture('nodes.json')]);
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  as = { issuer: base, token_endpoint: `${base}/oauth/token` };
});

afterAll(async () => {
  await t.close();
});

describe('resource-owner password grant with oauth4webapi', () => {
  it('gets a token (client_secret_post) and lists nodes with it, then refreshes', async () => {
    const response = await oauth.genericTokenEndpointRequest(as, client, oauth.ClientSecretPost('kubesphere'), 'password', { username: 'admin', password: 'P@88w0rd' }, insecure);
    const tokens = await oauth.processGenericTokenEndpointResponse(as, client, response);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(7200);
    expect(tokens.refresh_token).toBeTruthy();

    const nodes = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${base}/kapis/resources.platform.io/v1alpha3/nodes?limit=2&sortBy=name&ascending=true`), undefined, null, insecure);
    expect(nodes.status).toBe(200);
    const body = (await nodes.json()) as { items: { metadata: { name: string } }[]; totalItems: number };
    expect(body.totalItems).toBe(5);
    expect(body.items.map((item) => item.metadata.name)).toEqual(['edge1', 'master1']);

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.ClientSecretPost('kubesphere'), tokens.refresh_token as string, insecure),
    );
    const again = await oauth.protectedResourceRequest(refreshed.access_token, 'GET', new URL(`${base}/kapis/resources.kubesphere.io/v1alpha3/nodes/master1`), undefined, null, insecure);
    expect(again.status).toBe(200);
  });

  it('client_secret_basic is refused as KubeSphere refuses it (Basic is read as a user login)', async () => {
    const response = await oauth.genericTokenEndpointRequest(as, client, oauth.ClientSecretBasic('kubesphere'), 'password', { username: 'admin', password: 'P@88w0rd' }, insecure);
    expect(response.status).toBe(401);
  });

  it('wrong credentials surface as an OAuth invalid_grant error', async () => {
    const response = await oauth.genericTokenEndpointRequest(as, client, oauth.ClientSecretPost('kubesphere'), 'password', { username: 'admin', password: 'wrong' }, insecure);
    const error = await oauth.processGenericTokenEndpointResponse(as, client, response).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    expect((error as oauth.ResponseBodyError).error).toBe('invalid_grant');
    expect((error as oauth.ResponseBodyError).error_description).toBe('incorrect password');
  });
});
