import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

// A copy of ../shared/spec/endpoints.tsv: every documented method and path.
const documented = readFileSync('test/fixtures/endpoints.tsv', 'utf8')
  .split('\n')
  .filter((line) => line.trim())
  .map((line) => {
    const [method, path] = line.split('\t') as [string, string];
    return { method, path };
  });

function concrete(path: string): string {
  return path.replace('{id}', '0123456789abcdef01234567').replace('{token}', 'unknown-token').replace('{path...}', 'some/function');
}

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => {
  await t.close();
});

describe('every documented method and path is served', () => {
  it('has the whole list', () => {
    expect(documented.length).toBeGreaterThan(120);
  });

  it.each(documented)('$method $path', async ({ method, path }) => {
    const response = await t.app.inject({ method: method as 'GET', url: concrete(path) });
    const body = response.body;
    // Any answer but the router's own "no such route" counts: auth refusals and validation errors
    // come from the route itself.
    expect(body, `${method} ${path} answered ${response.statusCode} ${body.slice(0, 200)}`).not.toMatch(/"message":"Route \w+ [^"]+ not found"/);
    expect(response.statusCode).not.toBe(500);
  });
});
