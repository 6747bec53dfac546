import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { withoutRefusedNulls } from '../../src/infra/null-as-absent.js';

const schema = z.object({
  name: z.string(),
  intro: z.string().optional(),
  parentId: z.string().nullable().optional(),
  tags: z.array(z.string()).optional(),
});

describe('withoutRefusedNulls', () => {
  it('leaves out optional fields sent as null, and keeps a null the schema accepts', () => {
    expect(withoutRefusedNulls(schema, { name: 'a', intro: null, tags: null, parentId: null })).toEqual({ name: 'a', parentId: null });
  });
  it('answers nothing when the object is fine, or when something else is wrong with it', () => {
    expect(withoutRefusedNulls(schema, { name: 'a', parentId: null })).toBeUndefined();
    expect(withoutRefusedNulls(schema, { name: 5, intro: null })).toBeUndefined();
    expect(withoutRefusedNulls(schema, { name: 'a', tags: [null] })).toBeUndefined();
    expect(withoutRefusedNulls(schema, 'text')).toBeUndefined();
  });
  it('leaves a required field sent as null for the schema to refuse by name', () => {
    const stripped = withoutRefusedNulls(schema, { name: null });
    expect(stripped).toEqual({});
    expect(schema.safeParse(stripped).success).toBe(false);
  });
});
