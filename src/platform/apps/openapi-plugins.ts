/**
 * Turns an OpenAPI 3 / Swagger 2 document (JSON or YAML text) into one plugin workflow per
 * operation: pluginInput (the operation's parameters) → HTTP request → pluginOutput (result).
 * Only local `$ref`s are followed; a malformed document is a 400 naming the reason.
 */
import { isAlias, isScalar, parseDocument } from 'yaml';
import { Errors } from '../../infra/errors.js';
import { textHead } from '../../domain/text-cut.js';

type Json = Record<string, unknown>;
const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;
const HTTP_AVATAR = '/imgs/workflow/http.png';
/**
 * What one schema may generate: an app document must hold its workflow, and a small document
 * of shared `$ref`s must not expand into gigabytes (it is parsed before any limit is checked).
 */
export const MAX_PLUGIN_WORKFLOW_CHARS = 1_000_000;
export const MAX_GENERATED_WORKFLOW_CHARS = 16_000_000;

export interface GeneratedPlugin {
  name: string;
  intro: string;
  avatar: string;
  modules: Json[];
  edges: Json[];
}

interface Param {
  key: string;
  in: 'query' | 'path' | 'header' | 'body';
  valueType: string;
  required: boolean;
  description: string;
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const invalid = (reason: string) => Errors.missingParams(`Invalid Schema: ${reason}`);

/**
 * A document field as text: strings, numbers and booleans as written, anything else empty. The
 * document is the user's JSON: `String()` throws on an object whose `toString` is not a function.
 */
const textOf = (value: unknown): string => (typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : '');

/**
 * How YAML scalars are read: `failsafe` keeps each as the text written (names and keys stay
 * text: an operationId of 404 is "404"), `core` reads YAML 1.2 numbers, booleans and nulls.
 */
export type YamlScalars = 'failsafe' | 'core';

/**
 * A YAML document as JavaScript with its version field as written: to YAML 1.2 a plain
 * `swagger: 2.0` is the number 2, which names no version.
 */
function readYaml(text: string, schema: YamlScalars): { doc: unknown; version: string } {
  try {
    const document = parseDocument(text, { schema });
    if (document.errors[0]) throw document.errors[0];
    const doc: unknown = document.toJS({ maxAliasCount: 100 });
    if (!isObject(doc)) return { doc, version: '' };
    // `openapi: ~` is refused as the text "~" would be, not passed over for `swagger`.
    const key = doc.openapi !== undefined ? 'openapi' : 'swagger';
    const field = document.get(key, true);
    const node = isAlias(field) ? field.resolve(document) : field;
    return { doc, version: isScalar(node) && typeof node.source === 'string' ? node.source : textOf(doc[key]) };
  } catch (error) {
    throw invalid(`not JSON or YAML (${(error as Error).message.split('\n')[0]})`);
  }
}

/** Parses JSON, else YAML; the document must be an OpenAPI 3 or Swagger 2 object with paths. */
export function parseApiSchema(text: string, yamlScalars: YamlScalars = 'failsafe'): Json {
  let parsed: { doc: unknown; version: string };
  try {
    const doc: unknown = JSON.parse(text);
    parsed = { doc, version: isObject(doc) ? textOf(doc.openapi ?? doc.swagger) : '' };
  } catch {
    parsed = readYaml(text, yamlScalars);
  }
  const { doc, version } = parsed;
  if (!isObject(doc)) throw invalid('the document must be an object');
  if (!/^3\.\d/.test(version) && version !== '2.0') throw invalid("missing 'openapi: 3.x' or 'swagger: \"2.0\"'");
  if (!isObject(doc.paths)) throw invalid("'paths' must be an object");
  return doc;
}

function resolveRef(doc: Json, value: unknown, depth = 0): unknown {
  if (!isObject(value) || typeof value.$ref !== 'string' || depth > 20) return value;
  const ref = value.$ref;
  if (!ref.startsWith('#/')) return {};
  let current: unknown = doc;
  for (const part of ref.slice(2).split('/')) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    current = isObject(current) && Object.hasOwn(current, key) ? current[key] : undefined;
  }
  if (current === undefined) throw invalid(`unresolved reference ${ref}`);
  return resolveRef(doc, current, depth + 1);
}

function valueTypeOf(schema: unknown): string {
  const type = isObject(schema) ? schema.type : undefined;
  if (type === 'integer' || type === 'number') return 'number';
  if (type === 'boolean') return 'boolean';
  if (type === 'object') return 'object';
  if (type === 'array') return 'arrayAny';
  return 'string';
}

function serverOf(doc: Json): string {
  if (Array.isArray(doc.servers) && isObject(doc.servers[0]) && typeof doc.servers[0].url === 'string') return doc.servers[0].url;
  if (typeof doc.host === 'string') {
    const scheme = Array.isArray(doc.schemes) && typeof doc.schemes[0] === 'string' ? doc.schemes[0] : 'https';
    return `${scheme}://${doc.host}${typeof doc.basePath === 'string' ? doc.basePath : ''}`;
  }
  return '';
}

function paramsOf(doc: Json, pathItem: Json, operation: Json): Param[] {
  const out = new Map<string, Param>();
  const raw = [...(Array.isArray(pathItem.parameters) ? pathItem.parameters : []), ...(Array.isArray(operation.parameters) ? operation.parameters : [])];
  for (const entry of raw) {
    const p = resolveRef(doc, entry);
    if (!isObject(p) || typeof p.name !== 'string') throw invalid('a parameter has no name');
    const where = p.in;
    if (where === 'body') {
      const schema = resolveRef(doc, p.schema);
      const props = isObject(schema) && isObject(schema.properties) ? schema.properties : {};
      const required = new Set(isObject(schema) && Array.isArray(schema.required) ? schema.required : []);
      for (const [key, prop] of Object.entries(props)) {
        const resolved = resolveRef(doc, prop);
        out.set(`body:${key}`, { key, in: 'body', valueType: valueTypeOf(resolved), required: required.has(key), description: isObject(resolved) ? textOf(resolved.description) : '' });
      }
      continue;
    }
    if (where !== 'query' && where !== 'path' && where !== 'header' && where !== 'formData') continue;
    out.set(`${where}:${p.name}`, {
      key: p.name,
      in: where === 'formData' ? 'body' : where,
      valueType: valueTypeOf(resolveRef(doc, p.schema ?? p)),
      required: p.required === true || p.required === 'true' || where === 'path',
      description: textOf(p.description),
    });
  }
  const body = resolveRef(doc, operation.requestBody);
  const content = isObject(body) && isObject(body.content) ? body.content : {};
  const json = resolveRef(doc, isObject(content['application/json']) ? content['application/json'].schema : undefined);
  if (isObject(json) && isObject(json.properties)) {
    const required = new Set(Array.isArray(json.required) ? json.required : []);
    for (const [key, prop] of Object.entries(json.properties)) {
      const resolved = resolveRef(doc, prop);
      out.set(`body:${key}`, { key, in: 'body', valueType: valueTypeOf(resolved), required: required.has(key), description: isObject(resolved) ? textOf(resolved.description) : '' });
    }
  }
  return [...out.values()];
}

function buildWorkflow(input: { url: string; method: string; params: Param[]; headers: Record<string, string> }): { modules: Json[]; edges: Json[] } {
  const inputId = 'pluginInput';
  const httpId = 'httpRequest';
  const outputId = 'pluginOutput';
  const ref = (key: string) => `{{${key}}}`;
  // Braces excluded inside: a match attempt stops at the next brace, so the time stays linear.
  const path = input.url.replace(/\{([^{}]+)\}/g, (_m, key: string) => ref(key));
  const body = input.params.filter((p) => p.in === 'body');
  const jsonBody = body.length ? `{${body.map((p) => `"${p.key}": ${p.valueType === 'string' ? `"${ref(p.key)}"` : ref(p.key)}`).join(', ')}}` : '';
  const modules: Json[] = [
    {
      nodeId: inputId,
      name: 'Plugin input',
      flowNodeType: 'pluginInput',
      showStatus: false,
      position: { x: 0, y: 0 },
      version: '481',
      inputs: input.params.map((p) => ({
        key: p.key,
        valueType: p.valueType,
        label: p.key,
        description: p.description,
        toolDescription: p.description || p.key,
        required: p.required,
        renderTypeList: ['input', 'reference'],
        canEdit: true,
      })),
      outputs: input.params.map((p) => ({ id: p.key, key: p.key, label: p.key, valueType: p.valueType, type: 'hidden' })),
    },
    {
      nodeId: httpId,
      name: 'HTTP request',
      flowNodeType: 'httpRequest468',
      showStatus: true,
      position: { x: 500, y: 0 },
      version: '481',
      inputs: [
        { key: 'system_addInputParam', renderTypeList: ['addInputParam'], valueType: 'dynamic', label: '', required: false },
        ...input.params.map((p) => ({ key: p.key, label: p.key, valueType: p.valueType, renderTypeList: ['reference'], canEdit: true, value: [inputId, p.key] })),
        { key: 'system_httpMethod', renderTypeList: ['custom'], valueType: 'string', label: '', value: input.method.toUpperCase(), required: true },
        { key: 'system_httpReqUrl', renderTypeList: ['hidden'], valueType: 'string', label: '', value: path, required: false },
        { key: 'system_httpHeader', renderTypeList: ['custom'], valueType: 'any', label: '', value: [
          ...input.params.filter((p) => p.in === 'header').map((p) => ({ key: p.key, type: 'string', value: ref(p.key) })),
          ...Object.entries(input.headers).map(([key, value]) => ({ key, type: 'string', value })),
        ] },
        { key: 'system_httpParams', renderTypeList: ['hidden'], valueType: 'any', label: '', value: input.params.filter((p) => p.in === 'query').map((p) => ({ key: p.key, type: 'string', value: ref(p.key) })) },
        { key: 'system_httpJsonBody', renderTypeList: ['hidden'], valueType: 'any', label: '', value: jsonBody },
      ],
      outputs: [
        { id: 'system_addOutputParam', key: 'system_addOutputParam', type: 'dynamic', valueType: 'dynamic', label: '' },
        { id: 'error', key: 'error', label: 'Request error', valueType: 'object', type: 'static' },
        { id: 'httpRawResponse', key: 'httpRawResponse', label: 'Raw response', valueType: 'any', type: 'static', required: true },
      ],
    },
    {
      nodeId: outputId,
      name: 'Plugin output',
      flowNodeType: 'pluginOutput',
      showStatus: false,
      position: { x: 1000, y: 0 },
      version: '481',
      inputs: [{ key: 'result', valueType: 'any', label: 'result', renderTypeList: ['reference'], required: false, description: '', canEdit: true, value: [httpId, 'httpRawResponse'] }],
      outputs: [],
    },
  ];
  const edge = (source: string, target: string) => ({ source, target, sourceHandle: `${source}-source-right`, targetHandle: `${target}-target-left` });
  return { modules, edges: [edge(inputId, httpId), edge(httpId, outputId)] };
}

export function parseCustomHeaders(text: string | undefined): Record<string, string> {
  if (!text?.trim()) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw Errors.missingParams("Invalid field 'pluginData.customHeaders': must be a JSON object of header names to values");
  }
  if (!isObject(value)) throw Errors.missingParams("Invalid field 'pluginData.customHeaders': must be a JSON object");
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
}

/** One plugin per non-deprecated operation, named operationId || path (made unique by method). */
const MAX_PLUGIN_NAME = 200;

/**
 * An operation's plugin name, which is also its child's `pluginUniId`: the operationId (or path),
 * then with the method, then numbered, until no other operation of the schema has it, within
 * 200 characters. Two children of one id would leave one of them out of every later update.
 */
function uniqueName(base: string, method: string, used: Set<string>): string {
  const withSuffix = (suffix: string) => base.slice(0, MAX_PLUGIN_NAME - suffix.length) + suffix;
  let name = withSuffix('');
  for (let n = 1; used.has(name); n += 1) name = withSuffix(n === 1 ? `-${method}` : `-${method}-${n}`);
  used.add(name);
  return name;
}

export function generatePlugins(schemaText: string, customHeaders?: string): GeneratedPlugin[] {
  const doc = parseApiSchema(schemaText);
  const headers = parseCustomHeaders(customHeaders);
  const server = serverOf(doc);
  const plugins: GeneratedPlugin[] = [];
  const used = new Set<string>();
  let total = 0;
  for (const [path, rawItem] of Object.entries(doc.paths as Json)) {
    const pathItem = resolveRef(doc, rawItem);
    if (!isObject(pathItem)) throw invalid(`path ${path} must be an object`);
    for (const method of METHODS) {
      const operation = resolveRef(doc, pathItem[method]);
      if (operation === undefined) continue;
      if (!isObject(operation)) throw invalid(`operation ${method} ${path} must be an object`);
      if (operation.deprecated === true || operation.deprecated === 'true') continue;
      const name = uniqueName((typeof operation.operationId === 'string' && operation.operationId) || path, method, used);
      const workflow = buildWorkflow({ url: `${server}${path}`, method, params: paramsOf(doc, pathItem, operation), headers });
      const size = JSON.stringify(workflow.modules).length;
      if (size > MAX_PLUGIN_WORKFLOW_CHARS) throw invalid(`operation ${method} ${path.slice(0, 100)} would make a workflow over ${MAX_PLUGIN_WORKFLOW_CHARS} characters`);
      total += size;
      if (total > MAX_GENERATED_WORKFLOW_CHARS) throw invalid(`the operations would make workflows over ${MAX_GENERATED_WORKFLOW_CHARS} characters in all`);
      plugins.push({ name, intro: textHead(textOf(operation.description ?? operation.summary), 5000), avatar: HTTP_AVATAR, ...workflow });
    }
  }
  return plugins;
}
