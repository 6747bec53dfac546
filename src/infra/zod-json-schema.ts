import { z } from 'zod';

export type JsonSchema = Record<string, unknown>;

/**
 * The JSON Schema of what a zod schema accepts (`input`) or produces (`output`). Anything JSON
 * Schema cannot say becomes "any"; a Date produced is RFC 3339 text, as JSON.stringify writes it.
 */
export function zodJsonSchema(schema: z.ZodType, io: 'input' | 'output', target: 'draft-7' | 'openapi-3.0'): JsonSchema {
  const json = z.toJSONSchema(schema, {
    io,
    target,
    unrepresentable: 'any',
    override: (ctx) => {
      if (io === 'output' && ctx.zodSchema._zod.def.type === 'date') {
        ctx.jsonSchema.type = 'string';
        ctx.jsonSchema.format = 'date-time';
      }
    },
  }) as JsonSchema;
  delete json.$schema;
  return json;
}
