import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isForbiddenAddress, safeFetch } from '../../src/infra/outbound-fetch.js';

describe('isForbiddenAddress', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.8.9.1', true],
    ['10.1.2.3', true],
    ['172.16.0.1', true],
    ['172.31.255.255', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['224.0.0.1', true],
    ['8.8.8.8', false],
    ['93.184.216.34', false],
    ['::1', true],
    ['::', true],
    ['fe80::1', true],
    ['fd00::1', true],
    ['fc12:3456::1', true],
    ['ff02::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:8.8.8.8', false],
    ['64:ff9b::a9fe:a9fe', true],
    ['2002:0a00:0001::1', true],
    ['2606:4700:4700::1111', false],
    ['[::1]', true],
    ['not-an-ip', true],
  ])('%s forbidden: %s', (address, expected) => {
    expect(isForbiddenAddress(address)).toBe(expected);
  });

  // One case per range ipaddr.js names; only `unicast` (and, for IPv6, global unicast 2000::/3) passes.
  it.each([
    ['0.1.2.3', 'unspecified (0.0.0.0/8)', true],
    ['255.255.255.255', 'broadcast', true],
    ['239.255.255.250', 'multicast', true],
    ['169.254.0.1', 'linkLocal', true],
    ['127.255.255.254', 'loopback', true],
    ['100.127.255.254', 'carrierGradeNat', true],
    ['10.255.0.1', 'private 10/8', true],
    ['172.20.1.1', 'private 172.16/12', true],
    ['192.168.255.1', 'private 192.168/16', true],
    ['192.0.0.8', 'reserved 192.0.0/24', true],
    ['192.0.2.10', 'reserved TEST-NET-1', true],
    ['192.88.99.1', 'reserved 6to4 relay', true],
    ['198.19.0.1', 'reserved benchmarking 198.18/15', true],
    ['198.51.100.7', 'reserved TEST-NET-2', true],
    ['203.0.113.9', 'reserved TEST-NET-3', true],
    ['250.1.2.3', 'reserved 240/4', true],
    ['192.175.48.1', 'as112', true],
    ['192.52.193.1', 'amt', true],
    ['1.1.1.1', 'unicast', false],
    ['::', 'unspecified', true],
    ['fe80::abcd', 'linkLocal', true],
    ['ff05::2', 'multicast', true],
    ['::1', 'loopback', true],
    ['fd12:3456:789a::1', 'uniqueLocal', true],
    ['::ffff:192.168.0.1', 'ipv4Mapped carrying a private IPv4', true],
    ['::ffff:169.254.169.254', 'ipv4Mapped carrying the metadata address', true],
    ['::ffff:1.1.1.1', 'ipv4Mapped carrying a public IPv4', false],
    ['fec0::1', 'deprecated site-local', true],
    ['100::1', 'discard', true],
    ['::ffff:0:7f00:1', 'rfc6145', true],
    ['64:ff9b::7f00:1', 'rfc6052 NAT64 (loopback inside)', true],
    ['64:ff9b::808:808', 'rfc6052 NAT64 (public inside)', true],
    ['64:ff9b:1::a00:1', 'rfc6052 local-use NAT64', true],
    ['2002:7f00:1::1', '6to4 (loopback inside)', true],
    ['2002:808:808::1', '6to4 (public inside)', true],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo', true],
    ['2001:2::1', 'benchmarking', true],
    ['2001:3::1', 'amt', true],
    ['2001:4:112::1', 'as112v6', true],
    ['2001:20::1', 'orchid2', true],
    ['2001:db8::1', 'reserved documentation', true],
    ['3fff::1', 'reserved documentation (RFC 9637)', true],
    ['5f00::1', 'segment routing', true],
    ['::7f00:1', 'IPv4-compatible (outside 2000::/3)', true],
    ['::a00:1', 'IPv4-compatible private', true],
    ['4000::1', 'unassigned, outside global unicast', true],
    ['fe80::1%eth0', 'linkLocal with a zone', true],
    ['2a00:1450:4001:80b::200e', 'global unicast', false],
    ['0x7f.1', 'not a canonical literal', true],
    ['127.1', 'short IPv4 form', true],
  ])('%s (%s) forbidden: %s', (address, _range, expected) => {
    expect(isForbiddenAddress(address)).toBe(expected);
  });
});

describe('safeFetch against a local server', () => {
  let server: http.Server;
  let base: string;
  let port: number;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/ok') return res.end('hello');
      if (req.url === '/echo') {
        let body = '';
        req.on('data', (c) => {
          body += c;
        });
        req.on('end', () => res.end(JSON.stringify({ method: req.method, body, h: req.headers['x-test'] })));
        return;
      }
      if (req.url === '/big') return res.end(Buffer.alloc(10_000, 97));
      if (req.url === '/hang') return; // never answers
      if (req.url === '/redirect-ok') {
        res.writeHead(302, { location: '/ok' });
        return res.end();
      }
      if (req.url === '/headers') return res.end(JSON.stringify(req.headers));
      if (req.url === '/redirect-same-origin-headers') {
        res.writeHead(307, { location: '/headers' });
        return res.end();
      }
      if (req.url === '/redirect-cross-origin-headers') {
        res.writeHead(307, { location: `http://localhost:${port}/headers` });
        return res.end();
      }
      if (req.url === '/redirect-other') {
        res.writeHead(302, { location: `http://127.0.0.2:${port}/ok` });
        return res.end();
      }
      if (req.url === '/redirect-malformed') {
        res.writeHead(302, { location: 'http://[::1' });
        return res.end();
      }
      if (req.url === '/loop') {
        res.writeHead(302, { location: '/loop' });
        return res.end();
      }
      res.statusCode = 404;
      res.end('nope');
    });
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  const onlyFirstLoopback = (address: string) => address === '127.0.0.1';

  it('refuses loopback by literal and by name', async () => {
    await expect(safeFetch(`${base}/ok`)).rejects.toMatchObject({ httpStatus: 400, statusText: 'urlNotAllowed' });
    const byName: unknown = await safeFetch(`http://localhost:${port}/ok`).catch((error: unknown) => error);
    expect(byName).toMatchObject({ httpStatus: 400, message: expect.stringContaining('localhost resolves to an address that is not allowed') });
    // Which internal address a name has is not told to the caller.
    expect((byName as Error).message).not.toMatch(/127\.0\.0\.1|::1/);
    await expect(safeFetch(`http://[::ffff:127.0.0.1]:${port}/ok`)).rejects.toMatchObject({ httpStatus: 400 });
  });

  it('refuses other schemes and malformed URLs', async () => {
    await expect(safeFetch('file:///etc/passwd')).rejects.toMatchObject({ httpStatus: 400 });
    await expect(safeFetch('not a url')).rejects.toMatchObject({ httpStatus: 400 });
    await expect(safeFetch(`http://user:pw@127.0.0.1:${port}/`, { allowPrivate: true })).rejects.toMatchObject({ httpStatus: 400 });
  });

  it('fetches when private targets are allowed', async () => {
    const response = await safeFetch(`${base}/ok`, { allowPrivate: true });
    expect(response.status).toBe(200);
    expect(response.text()).toBe('hello');
    expect(response.finalUrl).toBe(`${base}/ok`);
    const byName = await safeFetch(`http://localhost:${port}/ok`, { allowPrivate: true });
    expect(byName.text()).toBe('hello');
  });

  it('sends method, headers and body', async () => {
    const response = await safeFetch(`${base}/echo`, { allowPrivate: true, method: 'POST', headers: { 'x-test': 'yes' }, body: 'payload' });
    expect(JSON.parse(response.text())).toEqual({ method: 'POST', body: 'payload', h: 'yes' });
  });

  it('follows redirects and checks each hop again', async () => {
    const ok = await safeFetch(`${base}/redirect-ok`, { isAddressAllowed: onlyFirstLoopback });
    expect(ok.text()).toBe('hello');
    expect(ok.finalUrl).toBe(`${base}/ok`);
    await expect(safeFetch(`${base}/redirect-other`, { isAddressAllowed: onlyFirstLoopback })).rejects.toMatchObject({ httpStatus: 400 });
    await expect(safeFetch(`${base}/loop`, { allowPrivate: true, maxRedirects: 3 })).rejects.toMatchObject({ httpStatus: 502 });
  });

  it('keeps the credentials of the caller on its own origin only when redirected', async () => {
    const headers = { authorization: 'Bearer secret', 'x-api-key': 'k-1', cookie: 'sid=1', accept: 'application/json', 'content-type': 'application/json' };
    const same = JSON.parse((await safeFetch(`${base}/redirect-same-origin-headers`, { allowPrivate: true, headers })).text());
    expect(same).toMatchObject({ authorization: 'Bearer secret', 'x-api-key': 'k-1', cookie: 'sid=1' });
    const other = JSON.parse((await safeFetch(`${base}/redirect-cross-origin-headers`, { allowPrivate: true, headers })).text());
    expect(other).toMatchObject({ accept: 'application/json', 'content-type': 'application/json' });
    expect(other.authorization).toBeUndefined();
    expect(other['x-api-key']).toBeUndefined();
    expect(other.cookie).toBeUndefined();
  });

  it('never reuses a connection another call opened under a looser policy (the sandbox call may reach private hosts)', async () => {
    // A privileged call leaves an idle connection to the private host; a guarded call of the same host right after must not ride it.
    expect((await safeFetch(`http://localhost:${port}/ok`, { allowPrivate: true })).text()).toBe('hello');
    await expect(safeFetch(`http://localhost:${port}/ok`)).rejects.toMatchObject({ httpStatus: 400, statusText: 'urlNotAllowed' });
    expect((await safeFetch(`${base}/ok`, { allowPrivate: true })).text()).toBe('hello');
    await expect(safeFetch(`http://localhost:${port}/ok`, { isAddressAllowed: (address) => address !== '127.0.0.1' && address !== '::1' })).rejects.toMatchObject({ httpStatus: 400 });
  });

  it('answers a redirect to a malformed address as a bad gateway, not an internal error', async () => {
    await expect(safeFetch(`${base}/redirect-malformed`, { allowPrivate: true })).rejects.toMatchObject({ httpStatus: 502, statusText: 'badGateway' });
  });

  it('caps the size', async () => {
    await expect(safeFetch(`${base}/big`, { allowPrivate: true, maxBytes: 1000 })).rejects.toMatchObject({ httpStatus: 502, message: expect.stringContaining('1000 bytes') });
    const full = await safeFetch(`${base}/big`, { allowPrivate: true, maxBytes: 10_000 });
    expect(full.body.length).toBe(10_000);
  });

  it('times out', async () => {
    await expect(safeFetch(`${base}/hang`, { allowPrivate: true, timeoutMs: 150 })).rejects.toMatchObject({ httpStatus: 504, statusText: 'gatewayTimeout' });
  });

  it('reports unreachable hosts as bad gateway', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const freePort = (closed.address() as AddressInfo).port;
    closed.close();
    await expect(safeFetch(`http://127.0.0.1:${freePort}/`, { allowPrivate: true })).rejects.toMatchObject({ httpStatus: 502 });
    await expect(safeFetch('http://no-such-host.invalid/', { allowPrivate: true })).rejects.toMatchObject({ httpStatus: 502 });
  });
});
