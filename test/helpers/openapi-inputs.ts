import { readFileSync } from 'node:fs';

/**
 * Reads openapi/openapi.json (generated from the route schemas) into operations, and derives
 * inputs from their schemas: a plausible baseline, and hostile values per field.
 */

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema documents are read loosely
export type JsonSchema = Record<string, any>;

export interface Field {
  name: string;
  in: 'query' | 'path' | 'body';
  required: boolean;
  schema: JsonSchema;
}

export interface Operation {
  method: string;
  path: string;
  /** Credential kinds of the `security` list, in order; empty for public routes. */
  security: string[];
  /** Content type of the documented body, if any. */
  bodyType?: string;
  fields: Field[];
}

/** Every method and path of the committed OpenAPI document. */
export function loadOperations(file = 'openapi/openapi.json'): Operation[] {
  const document = JSON.parse(readFileSync(file, 'utf8')) as { paths: Record<string, Record<string, JsonSchema>> };
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const fields: Field[] = (operation.parameters ?? []).map((p: JsonSchema) => ({ name: p.name, in: p.in, required: Boolean(p.required), schema: p.schema ?? {} }));
      const [bodyType, body] = Object.entries((operation.requestBody?.content ?? {}) as Record<string, JsonSchema>)[0] ?? [];
      const bodySchema = body?.schema as JsonSchema | undefined;
      const required = new Set<string>(bodySchema?.required ?? []);
      for (const [name, schema] of Object.entries((bodySchema?.properties ?? {}) as Record<string, JsonSchema>)) {
        fields.push({ name, in: 'body', required: required.has(name), schema });
      }
      // A path parameter may also be declared as a query parameter of the same name: keep one.
      const unique = fields.filter((f, i) => fields.findIndex((g) => g.name === f.name) === i);
      operations.push({
        method: method.toUpperCase(),
        path,
        security: ((operation.security ?? []) as Record<string, unknown>[]).map((s) => Object.keys(s)[0]!),
        bodyType,
        fields: unique,
      });
    }
  }
  return operations;
}

/** Names of ids: `id`, `_id`, `appId`, `tmbIds`, `dataIdList`… */
export const ID_NAME = /^(id|_id)$|Id$|Ids$|IdList$/;

const OBJECT_ID = /^\^\[0-9a-fA-F\]\{24\}\$$/;

/** The JSON types a schema accepts (unions flattened); `any` for an unconstrained schema. */
export function typesOf(schema: JsonSchema): Set<string> {
  const types = new Set<string>();
  const visit = (s: JsonSchema) => {
    if (s.anyOf || s.oneOf) for (const branch of s.anyOf ?? s.oneOf) visit(branch);
    else if (s.allOf) for (const branch of s.allOf) visit(branch);
    else if (s.enum) for (const value of s.enum) types.add(value === null ? 'null' : typeof value);
    else if (s.type) types.add(s.type === 'integer' ? 'number' : s.type);
    else types.add('any');
    if (s.nullable) types.add('null');
  };
  visit(schema);
  return types;
}

export const isObjectIdField = (schema: JsonSchema): boolean =>
  Boolean((schema.pattern && OBJECT_ID.test(schema.pattern)) || (schema.anyOf ?? []).some((s: JsonSchema) => isObjectIdField(s)));

/** An id of no existing document, for id fields no world resource fills. */
export const UNKNOWN_ID = '0123456789abcdef01234567';

/** A valid-looking value for a schema: enough to pass validation in most routes. */
export function sample(schema: JsonSchema, name = ''): unknown {
  if (schema.enum) return schema.enum.find((v: unknown) => v !== null) ?? null;
  if (schema.anyOf || schema.oneOf) {
    const branches = (schema.anyOf ?? schema.oneOf) as JsonSchema[];
    const usable = branches.find((b) => !(b.enum?.length === 1 && (b.enum[0] === null || b.enum[0] === ''))) ?? branches[0]!;
    return sample(usable, name);
  }
  if (schema.default !== undefined) return schema.default;
  switch (schema.type) {
    case 'string': {
      if (schema.pattern && OBJECT_ID.test(schema.pattern)) return UNKNOWN_ID;
      if (schema.format === 'date-time' || schema.format === 'date') return new Date(0).toISOString();
      if (/url|link/i.test(name)) return 'http://127.0.0.1:9/probe';
      const min = schema.minLength ?? 0;
      return 'zz-probe'.padEnd(min, 'z').slice(0, schema.maxLength ?? 100);
    }
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? Number(schema.exclusiveMinimum) + 1 : undefined);
      if (min !== undefined && min > -1e9) return min;
      return Math.min(1, schema.maximum ?? 1);
    }
    case 'boolean':
      return false;
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items ?? {}, name));
    case 'object': {
      const required = new Set<string>(schema.required ?? []);
      return Object.fromEntries(Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>).filter(([k]) => required.has(k)).map(([k, s]) => [k, sample(s, k)]));
    }
    default:
      return 'zz-probe';
  }
}

/** JSON text sent as is inside a body (values too deep for JSON.stringify on the test side). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** `{"a":{"a":…}}` nested `depth` levels. */
export const deepObject = (depth: number) => new RawJson(`${'{"a":'.repeat(depth)}"bottom"${'}'.repeat(depth)}`);

export const deepArray = (depth: number) => new RawJson(`${'['.repeat(depth)}"bottom"${']'.repeat(depth)}`);

/** JSON.stringify, with RawJson values spliced in as their text. */
export function toJson(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, v) => {
    if (!(v instanceof RawJson)) return v;
    raws.push(v.text);
    return `\u0000raw${raws.length - 1}\u0000`;
  });
  return text.replace(/"\\u0000raw(\d+)\\u0000"/g, (_, i) => raws[Number(i)]!);
}

const HUGE = 'x'.repeat(200_000);
const NUL = 'zz\u0000probe';
const OPERATOR = { $gt: '' };

export interface FieldMutation {
  name: string;
  applies: (field: Field, types: Set<string>) => boolean;
  value: (field: Field, types: Set<string>) => unknown;
}

const takesText = (types: Set<string>) => types.has('string') || types.has('any');
const takesContainer = (types: Set<string>) => types.has('object') || types.has('array') || types.has('any');

/** One wrong-typed value per schema: a number for text, text for numbers and booleans, etc. */
function wrongType(types: Set<string>): unknown {
  if (types.has('any')) return Symbol.for('skip');
  if (types.has('string')) return types.has('number') ? true : 12345;
  if (types.has('number') || types.has('boolean')) return 'not-a-number';
  if (types.has('array')) return 'not-an-array';
  return 'not-an-object';
}

/**
 * Hostile values tried on each field of a JSON body (one field at a time, the others valid).
 * A mutation that returns `Symbol.for('skip')` is not sent.
 */
export const BODY_FIELD_MUTATIONS: FieldMutation[] = [
  { name: 'wrong type', applies: () => true, value: (_, types) => wrongType(types) },
  { name: 'operator object', applies: () => true, value: () => OPERATOR },
  { name: 'NUL byte', applies: (_, types) => takesText(types) || takesContainer(types), value: (_, types) => (takesText(types) ? NUL : types.has('array') ? [NUL] : { [NUL]: NUL }) },
  { name: 'huge value', applies: (_, types) => takesText(types) || types.has('array'), value: (_, types) => (takesText(types) ? HUGE : Array.from({ length: 20_000 }, () => 'x')) },
  { name: 'invalid id', applies: (field) => ID_NAME.test(field.name), value: (_, types) => (types.has('array') ? ['not-an-id', 'zzzzzzzzzzzzzzzzzzzzzzzz'] : types.has('string') ? 'zzzzzzzzzzzzzzzzzzzzzzzz' : 'not-an-id') },
  { name: 'non-hex text id', applies: (field, types) => ID_NAME.test(field.name) && takesText(types) && !isObjectIdField(field.schema), value: () => 'not-a-hex-id' },
  { name: 'keys with . and $', applies: (_, types) => types.has('object') || types.has('any'), value: () => ({ 'a.b': 1, $where: 'sleep(5000)', nested: { '$set.x': { $gt: 1 } } }) },
  { name: 'deep nesting', applies: (_, types) => takesContainer(types), value: (_, types) => (types.has('array') && !types.has('object') ? deepArray(10_000) : deepObject(10_000)) },
];

/** Hostile values for query-string parameters (everything arrives as text or repeated keys). */
export const QUERY_FIELD_MUTATIONS: { name: string; applies: (field: Field, types: Set<string>) => boolean; value: (field: Field) => string | string[] }[] = [
  { name: 'NUL byte', applies: () => true, value: () => NUL },
  { name: 'huge value', applies: () => true, value: () => 'x'.repeat(20_000) },
  { name: 'repeated key', applies: () => true, value: () => ['a', 'b'] },
  { name: 'invalid id', applies: (field) => ID_NAME.test(field.name), value: () => 'zzzzzzzzzzzzzzzzzzzzzzzz' },
  { name: 'JSON operator text', applies: (_, types) => types.has('object') || types.has('array') || types.has('any'), value: () => '{"$gt":""}' },
];

/** The query string of `values`: arrays as repeated keys, objects as JSON text. */
export function queryString(values: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) continue;
    if (Array.isArray(value) && value.every((v) => typeof v !== 'object')) for (const v of value) params.append(key, String(v));
    else params.append(key, value instanceof RawJson ? value.text : typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value ?? ''));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** What a response must never show: stack frames, driver errors, source paths, JS error names. */
export const INTERNAL_DETAIL = /MongoServerError|MongoError|BSONError|node_modules|\/src\/|\.ts:\d+|\bat [^\s(]+ \([^)]*:\d+:\d+\)|TypeError|ReferenceError|RangeError|SyntaxError: |Cannot read propert|is not a function|Maximum call stack|ECONNREFUSED|E11000/;
