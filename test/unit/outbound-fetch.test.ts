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
      if (req.url === '/redirect-other') {
        res.writeHead(302, { location: `http://127.0.0.2:${port}/ok` });
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
    await expect(safeFetch(`http://localhost:${port}/ok`)).rejects.toMatchObject({ httpStatus: 400 });
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
