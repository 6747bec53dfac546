import fastJson from 'fast-json-stringify';
import type { z } from 'zod';
import { type JsonSchema, zodJsonSchema } from './zod-json-schema.js';

const isNullOnly = (schema: JsonSchema) => schema.type === 'null' || (Array.isArray(schema.enum) && schema.enum.length === 1 && schema.enum[0] === null);

/**
 * The schema fast-json-stringify compiles, derived from a route's response schema so that the
 * output is exactly what JSON.stringify would write for the same value:
 * - nothing is required and no default is filled in (an absent field stays absent);
 * - every typed value may be null (written `null`, never `""` or `0`);
 * - integers are written as numbers (never truncated);
 * - a union (other than "X or null") and anything untyped are written by JSON.stringify;
 * - an object keeps only its declared fields unless it declares more (`additionalProperties`),
 *   whose values are then written by JSON.stringify when untyped.
 */
export function serializationSchema(schema: JsonSchema): JsonSchema {
  const members = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (members) {
    const nonNull = members.filter((member) => !isNullOnly(member));
    return nonNull.length === 1 && nonNull[0] ? serializationSchema(nonNull[0]) : {};
  }
  if (schema.allOf) return {};
  let type = schema.type;
  if (Array.isArray(type)) {
    const nonNull = type.filter((name) => name !== 'null');
    type = nonNull.length === 1 ? nonNull[0] : undefined;
  }
  switch (type) {
    case 'object': {
      const out: JsonSchema = { type: 'object', nullable: true };
      const properties = schema.properties as Record<string, JsonSchema> | undefined;
      if (properties) out.properties = Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, serializationSchema(value)]));
      const extra = schema.additionalProperties;
      if (extra === true || (typeof extra === 'object' && extra !== null && Object.keys(extra).length === 0)) out.additionalProperties = true;
      else if (typeof extra === 'object' && extra !== null) out.additionalProperties = serializationSchema(extra as JsonSchema);
      return out;
    }
    case 'array':
      return { type: 'array', nullable: true, items: schema.items ? serializationSchema(schema.items as JsonSchema) : {} };
    case 'string':
      return schema.format === 'date-time' ? { type: 'string', format: 'date-time', nullable: true } : { type: 'string', nullable: true };
    case 'integer':
    case 'number':
      return { type: 'number', nullable: true };
    case 'boolean':
      return { type: 'boolean', nullable: true };
    case 'null':
      return { type: 'null' };
    default:
      return {};
  }
}

/** A compiled writer of values of `schema` (the zod response schema of a route). */
export function compileResponseSerializer(schema: z.ZodType): (data: unknown) => string {
  return fastJson(serializationSchema(zodJsonSchema(schema, 'output', 'draft-7'))) as (data: unknown) => string;
}
