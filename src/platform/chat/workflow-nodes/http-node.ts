/**
 * The HTTP request node (httpRequest468) and the Laf node. As in the reference, the `{{key}}`
 * templates of the URL, headers, query and body see the global variables, every other input of
 * the node (dynamic inputs under any dynamic-input key, older exports' plain inputs), then
 * appId, chatId, responseChatItemId and the last 10 histories. A run without a chat has no
 * chatId (undefined, not ''), as the reference's runs without one.
 */
import { randomBytes } from 'node:crypto';
import { WorkflowError } from '../../../domain/workflow/dispatch.js';
import { dynamicParams, fillPlaceholders, formatValueType, nodeLookup, referencedValue, referenceText, TextBudget } from '../../../domain/workflow/interpolate.js';
import { parseLooseJson } from '../../../domain/workflow/loose-json.js';
import { valueAtPath } from '../../../domain/workflow/response-path.js';
import type { NodeRunner } from '../../../domain/workflow/types.js';
import { untilCut } from './call-cut.js';
import { failureDetail, statusFailure } from './http-failure.js';
import type { NodeDeps } from './node-deps.js';
import { ShownSecrets } from './shown-secrets.js';

/**
 * Where a template value lands: plain text (URL, headers, forms), a raw-text or XML body, inside a
 * JSON string literal of a body (`"{{x}}"`: JSON-escaped without the outer quotes), or bare in a
 * body (`{{x}}`: a string as it is, so a JSON text from an earlier node becomes part of the body,
 * as the reference's insertion does; anything else as JSON).
 */
type Placement = 'text' | 'rawBody' | 'quoted' | 'bare';

/**
 * Stands for an undefined value inside a JSON string literal until the body is parsed: a string
 * that was only that placeholder (`"chat": "{{chatId}}"` without a chat) leaves its key out, as
 * the reference's body does (an array item becomes null); within other text it reads `null`.
 */
const ABSENT = `\u{F8FF}absent-${randomBytes(6).toString('hex')}\u{F8FF}`;

/** A null is `null` wherever it lands, as the reference writes it (JSON). */
function placedText(value: unknown, placement: Placement): string {
  if (value === undefined) return placement === 'quoted' ? ABSENT : placement === 'text' ? '' : 'null';
  if (typeof value === 'string') return placement === 'quoted' ? JSON.stringify(value).slice(1, -1) : value;
  return JSON.stringify(value);
}

/** What the HTTP node's own `{{key}}` inserts; a key it does not know stays as written (bare in JSON, null). A key holding `$` is no key of its. */
function httpVariableText(scope: Record<string, unknown>, key: string, placement: Placement): string | undefined {
  if (key.includes('$')) return undefined;
  if (!(key in scope)) return placement === 'bare' ? 'null' : undefined;
  return placedText(scope[key], placement);
}

/** What a reference (`{{$node.output$}}`) inserts: as a variable would be; without a value, null in a JSON body, as before. */
function httpReferenceText(value: unknown, placement: Placement): string | undefined {
  if (placement === 'quoted' || placement === 'bare') return value === undefined ? 'null' : placedText(value, placement);
  return referenceText(value);
}

/** The parsed body without the undefined placeholders (see ABSENT). */
function withoutAbsent(value: unknown): unknown {
  if (typeof value === 'string') return value === ABSENT ? null : value.replaceAll(ABSENT, 'null');
  if (Array.isArray(value)) return value.map(withoutAbsent);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) if (item !== ABSENT) out[key.replaceAll(ABSENT, 'null')] = withoutAbsent(item);
    return out;
  }
  return value;
}

/**
 * A JSON body template cut where its double-quoted strings start and end (the quotes stay in the
 * bare runs), so each placeholder is filled for where it stands.
 */
export function jsonTemplateRuns(template: string): { text: string; quoted: boolean }[] {
  const runs: { text: string; quoted: boolean }[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < template.length; i++) {
    const char = template[i];
    if (quoted && char === '\\') i++;
    else if (char === '"') {
      // The opening quote ends a bare run, the closing one starts the next.
      const end = quoted ? i : i + 1;
      runs.push({ text: template.slice(start, end), quoted });
      start = end;
      quoted = !quoted;
    }
  }
  runs.push({ text: template.slice(start), quoted });
  return runs.filter((run) => run.text !== '');
}

type KeyValue = { key?: string; value?: unknown; type?: string };

const asList = (value: unknown): KeyValue[] => (Array.isArray(value) ? (value.filter((item) => typeof item === 'object' && item !== null) as KeyValue[]) : []);

/**
 * A URL naming a system plugin (`getTime`, `mathExprVal`, `fetchUrl` …, no scheme and no
 * path): the plugin templates' HTTP nodes call the built-in callback so, not the network.
 */
const SYSTEM_PLUGIN_NAME = /^[A-Za-z][\w-]*(?:\/[A-Za-z][\w-]*)?$/;

/** Sets a header unless the node already sets it (in any letter case). */
function defaultHeader(headers: Record<string, string>, name: string, value: string): void {
  if (!Object.keys(headers).some((key) => key.toLowerCase() === name)) headers[name] = value;
}

/** A multipart/form-data body of text fields (quotes and line breaks in names escaped). */
function multipartBody(fields: [string, string][]): { boundary: string; body: string } {
  const boundary = `----FastGPTFormBoundary${randomBytes(12).toString('hex')}`;
  const escapeName = (name: string) => name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const parts = fields.map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(name)}"\r\n\r\n${value}\r\n`);
  return { boundary, body: `${parts.join('')}--${boundary}--\r\n` };
}

function parseResponse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The query pairs written in a URL itself (before the node's own query params are added). */
function typedQuery(url: string): [string, string][] {
  const start = url.indexOf('?');
  return start < 0 ? [] : [...new URLSearchParams(url.slice(start + 1).split('#')[0])];
}

export function createHttpRunners(deps: NodeDeps): Record<string, NodeRunner> {
  const httpRequest468: NodeRunner = async ({ params, node, variables, runtimeNodes, nodeById, histories, emit }) => {
    const {
      system_httpMethod: rawMethod,
      system_httpReqUrl: rawUrl,
      system_httpHeader: rawHeaders,
      system_httpParams: rawQuery,
      system_httpJsonBody: rawBody,
      system_httpFormBody: rawForm,
      system_httpContentType: rawContentType,
      system_httpTimeout: rawTimeout,
      ...otherInputs
    } = params;
    const scope: Record<string, unknown> = {
      ...variables,
      ...otherInputs,
      ...dynamicParams(node, params),
      appId: deps.appId,
      chatId: deps.chatId || undefined,
      responseChatItemId: deps.responseChatItemId || undefined,
      histories: histories.slice(-10),
    };
    const nodes = nodeById ?? nodeLookup(runtimeNodes);
    // One budget for every text of the request: many headers or body strings each naming a
    // large value add up, as one text naming it many times does.
    const budget = new TextBudget();
    // Variables and references in one pass: a caller's value holding `{{$node.input$}}` is inserted
    // as written, never read as a reference (to this node's own headers, say).
    const sub = (text: unknown, placement: Placement = 'text') =>
      fillPlaceholders(
        String(text ?? ''),
        {
          variable: (key) => httpVariableText(scope, key, placement),
          reference: (nodeId, key) => httpReferenceText(referencedValue(nodes, variables, node, nodeId, key), placement),
        },
        budget,
      );
    const subJson = (template: string) => jsonTemplateRuns(template).map((run) => sub(run.text, run.quoted ? 'quoted' : 'bare')).join('');
    const method = String(rawMethod || 'POST').toUpperCase();
    const timeoutSeconds = Math.min(600, Math.max(5, Number(rawTimeout ?? 30) || 30));
    // Substituted once: the budget (MAX_INTERPOLATED_GROWTH) counts each substitution's growth.
    const typedUrl = sub(rawUrl).trim();
    let url = typedUrl;
    if (!url) throw new WorkflowError('Http url is empty');
    const query = new URLSearchParams();
    for (const item of asList(rawQuery)) if (item.key) query.append(sub(item.key), sub(item.value));
    const systemPlugin = Boolean(deps.runSystemPlugin) && SYSTEM_PLUGIN_NAME.test(url);
    if ([...query.keys()].length > 0 && !systemPlugin) url += (url.includes('?') ? '&' : '?') + query.toString();
    const headers: Record<string, string> = {};
    for (const item of asList(rawHeaders)) if (item.key) headers[sub(item.key)] = sub(item.value);
    const contentType = String(rawContentType || 'json');
    let body: string | undefined;
    let bodyObject: unknown;
    // A body only where the reference's client sends one (a DELETE carries its values in the query).
    if (['POST', 'PUT', 'PATCH'].includes(method)) {
      if (contentType === 'json' && typeof rawBody === 'string' && rawBody.trim()) {
        const raw = subJson(rawBody);
        try {
          bodyObject = withoutAbsent(parseLooseJson(raw));
        } catch (error) {
          throw new WorkflowError(`Invalid JSON body: ${(error as Error).message}`);
        }
        body = JSON.stringify(bodyObject);
        defaultHeader(headers, 'content-type', 'application/json');
      } else if (contentType === 'x-www-form-urlencoded') {
        const form = new URLSearchParams();
        for (const item of asList(rawForm)) if (item.key) form.append(sub(item.key), sub(item.value));
        body = form.toString();
        bodyObject = Object.fromEntries(form);
        defaultHeader(headers, 'content-type', 'application/x-www-form-urlencoded');
      } else if (contentType === 'form-data') {
        const fields = asList(rawForm).flatMap((item) => (item.key ? [[sub(item.key), sub(item.value)] as [string, string]] : []));
        const multipart = multipartBody(fields);
        body = multipart.body;
        bodyObject = Object.fromEntries(fields);
        // The boundary is ours: a content type typed in the node would not match it.
        for (const name of Object.keys(headers)) if (name.toLowerCase() === 'content-type') delete headers[name];
        headers['content-type'] = `multipart/form-data; boundary=${multipart.boundary}`;
      } else if (contentType === 'xml' || contentType === 'raw-text') {
        body = sub(rawBody, 'rawBody');
        defaultHeader(headers, 'content-type', contentType === 'xml' ? 'application/xml' : 'text/plain');
      }
    }
    // Every output a response key can fill, `error` included (a 200 answer's own error field
    // sets it, as in the reference); the raw response stays what was received.
    const declared = node.outputs.filter((o) => o.type === 'dynamic' || (o.key !== 'httpRawResponse' && o.key !== 'system_addOutputParam'));
    // The run detail holds no credential the node sends (see shown-secrets.ts): header values
    // masked, credential-named query and body fields too, and each of those wherever else shown.
    const secrets = new ShownSecrets();
    const shownHeaders = secrets.headers(headers);
    const shownParams = secrets.fields(Object.fromEntries(query));
    // A credential typed into the URL's own query is noted too: masked wherever the detail shows it bare.
    secrets.fields(Object.fromEntries(typedQuery(typedUrl)));
    const shownBody = secrets.fields(bodyObject ?? body);
    const shown = { params: secrets.show(shownParams), body: secrets.show(shownBody), headers: shownHeaders };
    // A call the turn's hang-up cuts fails as a cancelled request (call-cut.ts): recorded as any
    // failed call, and the turn then ends (it was aborted).
    const runPlugin = deps.runSystemPlugin;
    try {
      const response =
        systemPlugin && runPlugin
          ? { status: 200, text: JSON.stringify(await untilCut(deps.signal, (signal) => runPlugin(url, { ...Object.fromEntries(query), ...((bodyObject as Record<string, unknown>) ?? {}) }, signal))) }
          : await untilCut(deps.signal, (signal) => deps.httpCall({ url, method, headers, body, timeoutMs: timeoutSeconds * 1000, signal }));
      const parsed = parseResponse(response.text);
      if (response.status >= 400) throw statusFailure(response.status, parsed);
      const picked: Record<string, unknown> = {};
      if (typeof parsed === 'object' && parsed !== null) {
        for (const output of declared) {
          const at = valueAtPath(parsed, output.key);
          if (at.found) picked[output.key] = formatValueType(at.value, output.valueType);
        }
        const answerText = (parsed as { answerText?: unknown }).answerText;
        if (typeof answerText === 'string') emit({ event: 'fastAnswer', text: answerText });
      }
      const outputs = Object.assign({ httpRawResponse: parsed }, picked);
      // As a tool, the node answers the model with the values it picked (the whole response without any).
      const toolResponses = Object.keys(picked).length > 0 ? picked : parsed;
      return { outputs, responseData: { totalPoints: 0, ...shown, httpResult: secrets.show(parsed) }, toolResponses };
    } catch (error) {
      const detail = failureDetail(error, method);
      const apiMessage = (detail.data as { message?: unknown } | undefined)?.message;
      const rawText = typeof apiMessage === 'string' && apiMessage ? apiMessage : (error as Error).message;
      return { outputs: { error: detail, httpRawResponse: rawText }, responseData: { totalPoints: 0, ...shown, httpResult: { error: secrets.show(detail) } } };
    }
  };

  /** A Laf cloud function: POST the dynamic inputs plus system params, map the reply's keys to outputs. */
  const lafModule: NodeRunner = async ({ params, node, histories }) => {
    const url = String(params.system_httpReqUrl ?? '').trim();
    if (!url) throw new WorkflowError('Http url is empty');
    const dynamic = dynamicParams(node, params);
    const systemParams = { appId: deps.appId, chatId: deps.chatId || undefined, responseChatItemId: deps.responseChatItemId || undefined, histories: histories.slice(-10) };
    const body = JSON.stringify({ systemParams, ...dynamic });
    // Credential-named inputs are masked in the run detail, as the HTTP node's (shown-secrets.ts).
    const secrets = new ShownSecrets();
    const shownBody = secrets.fields(dynamic);
    try {
      const response = await untilCut(deps.signal, (signal) => deps.httpCall({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body, timeoutMs: 60_000, signal }));
      if (response.status >= 400) throw new Error(`HTTP ${response.status}`);
      const parsed = parseResponse(response.text);
      const outputs: Record<string, unknown> = { httpRawResponse: parsed };
      if (typeof parsed === 'object' && parsed !== null) {
        for (const output of node.outputs) if (output.key in parsed) outputs[output.key] = formatValueType((parsed as Record<string, unknown>)[output.key], output.valueType);
      }
      return { outputs, responseData: { totalPoints: 0, body: secrets.show(shownBody), httpResult: secrets.show(parsed) }, toolResponses: parsed };
    } catch (error) {
      return { outputs: { httpRawResponse: (error as Error).message }, responseData: { totalPoints: 0, body: secrets.show(shownBody), httpResult: { error: (error as Error).message } } };
    }
  };

  return { httpRequest468, lafModule };
}
