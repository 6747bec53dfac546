import { describe, expect, it } from 'vitest';
import { generatePlugins, parseApiSchema, parseCustomHeaders } from '../../src/platform/apps/openapi-plugins.js';

describe('parseApiSchema', () => {
  it.each([
    ['{"openapi":"3.1.0","paths":{}}', true],
    ['openapi: 3.0.3\npaths: {}', true],
    ['swagger: "2.0"\npaths: {}', true],
    ['swagger: 2.0\npaths: {}', true],
    ['v: &v 3.0\nopenapi: *v\npaths: {}', true],
    ['openapi: 3\npaths: {}', false],
    ['openapi: ~\nswagger: "2.0"\npaths: {}', false],
    ['{"openapi":"2.5","paths":{}}', false],
    ['{"openapi":"3.0.0"}', false],
    ['[1,2]', false],
    ['a: [', false],
  ])('%j valid: %s', (text, valid) => {
    // The version is judged as written whichever way YAML scalars are read.
    for (const scalars of ['failsafe', 'core'] as const) {
      if (valid) expect(parseApiSchema(text, scalars)).toBeTruthy();
      else expect(() => parseApiSchema(text, scalars)).toThrow(/Invalid Schema/);
    }
  });

  it('reads YAML scalars as text, or as YAML 1.2 types when asked', () => {
    const text = 'swagger: 2.0\npaths:\n  /a:\n    get:\n      operationId: 404\n      deprecated: true\n      x-limit: 10\n';
    expect(parseApiSchema(text)).toEqual({ swagger: '2.0', paths: { '/a': { get: { operationId: '404', deprecated: 'true', 'x-limit': '10' } } } });
    expect(parseApiSchema(text, 'core')).toEqual({ swagger: 2, paths: { '/a': { get: { operationId: 404, deprecated: true, 'x-limit': 10 } } } });
  });
});

describe('generatePlugins', () => {
  it('names operations, skips deprecated ones and de-duplicates names', () => {
    const plugins = generatePlugins(
      JSON.stringify({
        openapi: '3.0.0',
        paths: { '/a': { get: {}, post: {}, put: { deprecated: true } }, '/b': { get: { operationId: 'getB', summary: 'B' } } },
      }),
    );
    expect(plugins.map((p) => [p.name, p.intro])).toEqual([
      ['/a', ''],
      ['/a-post', ''],
      ['getB', 'B'],
    ]);
  });

  // A name is its child's pluginUniId: two operations of one name left one child out of updates.
  it('keeps names unique when an operationId is what de-duplication makes, and when names are cut to 200', () => {
    const long = 'x'.repeat(250);
    const plugins = generatePlugins(
      JSON.stringify({
        openapi: '3.0.0',
        paths: {
          '/c': { get: { operationId: 'op' }, post: { operationId: 'op' } },
          '/d': { post: { operationId: 'op-post' }, get: { operationId: 'op' } },
          '/e': { get: { operationId: `${long}1` }, post: { operationId: `${long}2` } },
        },
      }),
    );
    const names = plugins.map((p) => p.name);
    expect(names.slice(0, 4)).toEqual(['op', 'op-post', 'op-get', 'op-post-post']);
    expect(names.slice(4)).toEqual(['x'.repeat(200), `${'x'.repeat(195)}-post`]);
    expect(new Set(names).size).toBe(names.length);
  });

  it('maps query, path, header and body parameters (Swagger 2 body, OpenAPI 3 requestBody, $ref)', () => {
    const [plugin] = generatePlugins(
      JSON.stringify({
        swagger: '2.0',
        host: 'h.example',
        schemes: ['http'],
        basePath: '/api',
        parameters: { Q: { name: 'q', in: 'query', type: 'string' } },
        paths: {
          '/items/{id}': {
            parameters: [{ $ref: '#/parameters/Q' }],
            post: {
              operationId: 'save',
              parameters: [
                { name: 'id', in: 'path', type: 'integer' },
                { name: 'X-Trace', in: 'header', type: 'string' },
                { name: 'payload', in: 'body', schema: { type: 'object', required: ['n'], properties: { n: { type: 'number' }, s: { type: 'string' } } } },
              ],
            },
          },
        },
      }),
      '{"authorization":"Bearer t"}',
    );
    const [input, httpNode] = (plugin?.modules ?? []) as { inputs: unknown }[];
    if (!input || !httpNode) throw new Error('expected three nodes');
    expect((input.inputs as { key: string; valueType: string; required: boolean }[]).map((i) => [i.key, i.valueType, i.required])).toEqual([
      ['q', 'string', false],
      ['id', 'number', true],
      ['X-Trace', 'string', false],
      ['n', 'number', true],
      ['s', 'string', false],
    ]);
    const value = (key: string) => (httpNode.inputs as { key: string; value: unknown }[]).find((i) => i.key === key)?.value;
    expect(value('system_httpMethod')).toBe('POST');
    expect(value('system_httpReqUrl')).toBe('http://h.example/api/items/{{id}}');
    expect(value('system_httpParams')).toEqual([{ key: 'q', type: 'string', value: '{{q}}' }]);
    expect(value('system_httpHeader')).toEqual([
      { key: 'X-Trace', type: 'string', value: '{{X-Trace}}' },
      { key: 'authorization', type: 'string', value: 'Bearer t' },
    ]);
    expect(value('system_httpJsonBody')).toBe('{"n": {{n}}, "s": "{{s}}"}');
    expect(plugin?.edges).toHaveLength(2);
  });

  it('refuses unresolved references and malformed operations', () => {
    expect(() => generatePlugins(JSON.stringify({ openapi: '3.0.0', paths: { '/a': { get: { parameters: [{ $ref: '#/x/y' }] } } } }))).toThrow(/unresolved reference/);
    expect(() => generatePlugins(JSON.stringify({ openapi: '3.0.0', paths: { '/a': { get: 'nope' } } }))).toThrow(/must be an object/);
    expect(() => parseCustomHeaders('[1]')).toThrow(/customHeaders/);
    expect(parseCustomHeaders('')).toEqual({});
  });
});
