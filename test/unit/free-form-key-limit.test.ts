import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAppInput, MAX_CHAT_CONFIG_KEYS, updateAppInput } from '../../src/platform/apps/apps.schema.js';
import { chatTestSchema, completionsSchema, debugSchema } from '../../src/platform/chat/chat.schema.js';
import { createCollectionSchema, createLinkSchema, localFileDataSchema } from '../../src/platform/datasets/collections/collection.schema.js';
import { describeZodError } from '../../src/infra/error-render.js';
import { holdsMoreKeysThan, MAX_FREE_FORM_KEYS, zFreeFormRecord } from '../../src/infra/zod.js';

/** An object of `count` keys (k0, k1 …), each holding `value`. */
const keys = (count: number, value: unknown = 1) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, value]));

/** The 400 message a route would answer for `input`, or 'ok'. */
function verdict(schema: z.ZodType, input: unknown): string {
  const result = schema.safeParse(input);
  return result.success ? 'ok' : describeZodError(result.error);
}

const ID = '0123456789abcdef01234567';

describe('holdsMoreKeysThan', () => {
  it('counts the keys of every object at every level, objects inside arrays included', () => {
    const value = { a: { b: 1, c: [{ d: 1, e: { f: 1 } }, 'x', [{ g: 1 }]] } };
    // a, b, c, d, e, f, g: seven keys; array items are not keys.
    expect(holdsMoreKeysThan(value, 7)).toBe(false);
    expect(holdsMoreKeysThan(value, 6)).toBe(true);
    expect(holdsMoreKeysThan({ list: Array.from({ length: 10_000 }, (_, i) => i) }, 1)).toBe(false);
    expect(holdsMoreKeysThan('text', 0)).toBe(false);
    expect(holdsMoreKeysThan(null, 0)).toBe(false);
  });

  it('stops at the key past the bound (reads no more values than that)', () => {
    let reads = 0;
    const counted = new Proxy(keys(5000), {
      get(target, key, receiver) {
        reads += 1;
        return Reflect.get(target, key, receiver);
      },
    });
    expect(holdsMoreKeysThan(counted, 10)).toBe(true);
    expect(reads).toBe(10);
  });
});

describe('free-form objects of requests', () => {
  it('zFreeFormRecord takes up to its bound, and names the field past it', () => {
    const schema = z.object({ data: zFreeFormRecord(3) });
    expect(verdict(schema, { data: { a: 1, b: { c: 1 } } })).toBe('ok');
    expect(verdict(schema, { data: { a: 1, b: { c: 1, d: 1 } } })).toBe("Invalid field 'data': more than 3 keys (counted at every level of nesting)");
  });

  it('chat variables and metadata: 1000 keys are taken, 1001 are a 400 naming the field', () => {
    const base = { messages: [{ role: 'user', content: 'hi' }] };
    expect(MAX_FREE_FORM_KEYS).toBe(1000);
    expect(verdict(completionsSchema, { ...base, variables: keys(1000), metadata: keys(1000) })).toBe('ok');
    expect(verdict(completionsSchema, { ...base, variables: keys(1001) })).toMatch(/^Invalid field 'variables': more than 1000 keys/);
    expect(verdict(completionsSchema, { ...base, variables: { nested: keys(1000) } })).toMatch(/^Invalid field 'variables': more than 1000 keys/);
    expect(verdict(completionsSchema, { ...base, metadata: keys(1001) })).toMatch(/^Invalid field 'metadata': more than 1000 keys/);
    const graph = { nodes: [], edges: [], appId: ID };
    expect(verdict(chatTestSchema, { ...graph, variables: keys(1001) })).toMatch(/^Invalid field 'variables': more than 1000 keys/);
    expect(verdict(debugSchema, { ...graph, variables: keys(1001) })).toMatch(/^Invalid field 'variables': more than 1000 keys/);
  });

  it('chat variables and metadata keep their null and absent forms', () => {
    const parsed = completionsSchema.parse({ variables: null, metadata: null });
    expect(parsed.variables).toEqual({});
    expect(parsed.metadata).toBeUndefined();
    expect(completionsSchema.parse({}).variables).toEqual({});
    expect(chatTestSchema.parse({ nodes: [], edges: [], appId: ID }).variables).toEqual({});
  });

  it('a chat config (chatTest, app create and update) takes up to MAX_CHAT_CONFIG_KEYS', () => {
    expect(MAX_CHAT_CONFIG_KEYS).toBe(2000);
    const graph = { nodes: [], edges: [], appId: ID };
    expect(verdict(chatTestSchema, { ...graph, chatConfig: keys(2000) })).toBe('ok');
    expect(verdict(chatTestSchema, { ...graph, chatConfig: keys(2001) })).toMatch(/^Invalid field 'chatConfig': more than 2000 keys/);
    const variables = Array.from({ length: 1000 }, (_, i) => ({ key: `v${i}`, label: 'V' }));
    expect(verdict(createAppInput, { name: 'a', type: 'advanced', chatConfig: { variables } })).toMatch(/^Invalid field 'chatConfig': more than 2000 keys/);
    expect(verdict(createAppInput, { name: 'a', type: 'advanced', chatConfig: { variables: variables.slice(0, 999) } })).toBe('ok');
    expect(verdict(updateAppInput, { appId: ID, chatConfig: keys(2001) })).toMatch(/^Invalid field 'chatConfig': more than 2000 keys/);
    // The scheduled trigger keeps its own checks.
    expect(verdict(updateAppInput, { appId: ID, chatConfig: { scheduledTriggerConfig: { cronString: 5 } } })).toMatch(/^Invalid field 'chatConfig.scheduledTriggerConfig.cronString'/);
  });

  it('collection metadata, file metadata and collection metadata of an upload', () => {
    const base = { datasetId: ID, name: 'c' };
    expect(verdict(createCollectionSchema, { ...base, metadata: keys(1000) })).toBe('ok');
    expect(verdict(createCollectionSchema, { ...base, metadata: keys(1001) })).toMatch(/^Invalid field 'metadata': more than 1000 keys/);
    expect(verdict(createLinkSchema, { datasetId: ID, link: 'https://example.com', metadata: keys(1001) })).toMatch(/^Invalid field 'metadata': more than 1000 keys/);
    expect(verdict(localFileDataSchema, { datasetId: ID, fileMetadata: keys(1001) })).toMatch(/^Invalid field 'fileMetadata': more than 1000 keys/);
    expect(verdict(localFileDataSchema, { datasetId: ID, collectionMetadata: keys(1001) })).toMatch(/^Invalid field 'collectionMetadata': more than 1000 keys/);
    // Stored merged: bounded together (a key in both counts once).
    const half = (from: number) => Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`k${from + i}`, 1]));
    expect(verdict(localFileDataSchema, { datasetId: ID, metadata: half(0), collectionMetadata: half(300) })).toBe('ok');
    expect(verdict(localFileDataSchema, { datasetId: ID, metadata: half(0), collectionMetadata: half(600) })).toMatch(/^Invalid field 'collectionMetadata': more than 1000 keys with those of 'metadata'/);
  });
});
