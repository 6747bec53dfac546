/** The dataset search and HTTP request node runners. */
import { replaceEditorVariables } from '../../../domain/workflow/interpolate.js';
import type { NodeRunner } from '../../../domain/workflow/types.js';
import type { NodeDeps } from './node-deps.js';

/** Flattens an object to `a.b` / `list[0].c` keys, keeping every intermediate value too. */
export function flattenObject(value: unknown, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
  if (prefix) out[prefix] = value;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) flattenObject(item, `${prefix}[${index}]`, out);
  }
  else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) flattenObject(item, prefix ? `${prefix}.${key}` : key, out);
  }
  return out;
}

/** The HTTP node's own `{{key}}` substitution: values JSON-encoded without outer quotes. */
function replaceHttpVariables(text: string, scope: Record<string, unknown>, json: boolean): string {
  return text.replace(/\{\{([^{}$]+)\}\}/g, (whole, key: string) => {
    if (!(key in scope)) return json ? 'null' : whole;
    const value = scope[key];
    if (value === undefined || value === null) return json ? 'null' : '';
    if (typeof value === 'string') return json ? JSON.stringify(value).slice(1, -1) : value;
    return JSON.stringify(value);
  });
}

type KeyValue = { key: string; value: string; type?: string };

export function createIoRunners(deps: NodeDeps): Record<string, NodeRunner> {
  const datasetSearchNode: NodeRunner = async ({ params }) => {
    const datasets = (Array.isArray(params.datasets) ? params.datasets : []) as { datasetId: string }[];
    if (datasets.length === 0) throw new Error('core.chat.error.Select dataset empty');
    const text = String(params.userChatInput ?? '');
    if (!text) throw new Error('core.chat.error.User input empty');
    if (!deps.searchDatasets) throw new Error('Dataset search is not available in this deployment');
    const limit = Number(params.limit ?? 1500) || 1500;
    const similarity = Number(params.similarity ?? 0.4);
    const searchMode = String(params.searchMode || 'embedding');
    const result = await deps.searchDatasets({
      teamId: deps.teamId,
      datasetIds: datasets.map((d) => d.datasetId),
      text,
      limit,
      similarity,
      searchMode,
      usingReRank: params.usingReRank === true,
    });
    return {
      outputs: { quoteQA: result.list },
      responseData: { totalPoints: 0, query: text, model: result.model, tokens: result.tokens, similarity, limit, searchMode, searchUsingReRank: params.usingReRank === true, quoteList: result.list },
      usages: [{ moduleName: 'Dataset search', totalPoints: 0, model: result.model, tokens: result.tokens }],
      toolResponses: result.list.map((item) => ({ id: item.id, text: `${item.q}\n${item.a}`.trim() })),
    };
  };

  const httpRequest468: NodeRunner = async ({ params, node, variables, runtimeNodes, histories, emit }) => {
    const dynamic = (params.system_addInputParam ?? {}) as Record<string, unknown>;
    const scope: Record<string, unknown> = {
      ...variables,
      ...dynamic,
      appId: deps.appId,
      chatId: deps.chatId,
      responseChatItemId: deps.responseChatItemId,
      histories: histories.slice(-10),
    };
    const jsonText = (value: unknown) => (value === undefined ? 'null' : typeof value === 'string' ? JSON.stringify(value).slice(1, -1) : JSON.stringify(value));
    const sub = (text: string, json = false) =>
      replaceEditorVariables(replaceHttpVariables(text, scope, json), runtimeNodes, variables, node, json ? jsonText : undefined);
    const method = String(params.system_httpMethod || 'POST').toUpperCase();
    const timeoutSeconds = Math.min(600, Math.max(5, Number(params.system_httpTimeout ?? 30) || 30));
    let url = sub(String(params.system_httpReqUrl ?? '')).trim();
    if (!url) throw new Error('Http url is empty');
    const query = new URLSearchParams();
    for (const item of (params.system_httpParams ?? []) as KeyValue[]) if (item.key) query.append(item.key, sub(String(item.value ?? '')));
    if ([...query.keys()].length > 0) url += (url.includes('?') ? '&' : '?') + query.toString();
    const headers: Record<string, string> = {};
    for (const item of (params.system_httpHeader ?? []) as KeyValue[]) if (item.key) headers[item.key] = sub(String(item.value ?? ''));
    const contentType = String(params.system_httpContentType || 'json');
    let body: string | undefined;
    if (!['GET', 'HEAD'].includes(method)) {
      if (contentType === 'json' && typeof params.system_httpJsonBody === 'string' && params.system_httpJsonBody.trim()) {
        const raw = sub(params.system_httpJsonBody, true);
        try {
          body = JSON.stringify(JSON.parse(raw));
        } catch (error) {
          throw new Error(`Invalid JSON body: ${(error as Error).message}`);
        }
        headers['content-type'] ??= 'application/json';
      } else if (contentType === 'x-www-form-urlencoded' || contentType === 'form-data') {
        const form = new URLSearchParams();
        for (const item of (params.system_httpFormBody ?? []) as KeyValue[]) if (item.key) form.append(item.key, sub(String(item.value ?? '')));
        body = form.toString();
        headers['content-type'] ??= 'application/x-www-form-urlencoded';
      } else if (contentType === 'xml' || contentType === 'raw-text') {
        body = sub(String(params.system_httpJsonBody ?? ''));
        headers['content-type'] ??= contentType === 'xml' ? 'application/xml' : 'text/plain';
      }
    }
    const declared = node.outputs.filter((o) => o.type === 'dynamic' || (o.key !== 'error' && o.key !== 'httpRawResponse' && o.key !== 'system_addOutputParam'));
    try {
      const response = await deps.httpCall({ url, method, headers, body, timeoutMs: timeoutSeconds * 1000 });
      let parsed: unknown = response.text;
      try {
        parsed = JSON.parse(response.text);
      } catch {
        parsed = response.text;
      }
      if (response.status >= 400) throw Object.assign(new Error(`HTTP ${response.status}`), { status: response.status, data: parsed });
      const outputs: Record<string, unknown> = { httpRawResponse: parsed };
      if (typeof parsed === 'object' && parsed !== null) {
        const flat = flattenObject(parsed);
        for (const output of declared) if (output.key in flat) outputs[output.key] = flat[output.key];
        const answerText = (parsed as { answerText?: unknown }).answerText;
        if (typeof answerText === 'string') emit({ event: 'fastAnswer', text: answerText });
      }
      return { outputs, responseData: { totalPoints: 0, params: Object.fromEntries(query), body, headers, httpResult: parsed }, toolResponses: parsed };
    } catch (error) {
      const failure = error as Error & { status?: number; data?: unknown; code?: string };
      const detail = { message: failure.message, data: failure.data, name: failure.name, method, code: failure.code, status: failure.status };
      return { outputs: { error: detail, httpRawResponse: failure.message }, responseData: { totalPoints: 0, params: Object.fromEntries(query), body, headers, httpResult: { error: detail } } };
    }
  };

  /** A Laf cloud function: POST the dynamic inputs plus system params, map the reply's keys to outputs. */
  const lafModule: NodeRunner = async ({ params, node, histories }) => {
    const url = String(params.system_httpReqUrl ?? '').trim();
    if (!url) throw new Error('Http url is empty');
    const dynamic = (params.system_addInputParam ?? {}) as Record<string, unknown>;
    const body = JSON.stringify({ systemParams: { appId: deps.appId, chatId: deps.chatId, responseChatItemId: deps.responseChatItemId, histories: histories.slice(-10) }, ...dynamic });
    try {
      const response = await deps.httpCall({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body, timeoutMs: 60_000 });
      if (response.status >= 400) throw new Error(`HTTP ${response.status}`);
      let parsed: unknown = response.text;
      try {
        parsed = JSON.parse(response.text);
      } catch {
        parsed = response.text;
      }
      const outputs: Record<string, unknown> = { httpRawResponse: parsed };
      if (typeof parsed === 'object' && parsed !== null) {
        for (const output of node.outputs) if (output.key in parsed) outputs[output.key] = (parsed as Record<string, unknown>)[output.key];
      }
      return { outputs, responseData: { totalPoints: 0, body: dynamic, httpResult: parsed }, toolResponses: parsed };
    } catch (error) {
      return { outputs: { httpRawResponse: (error as Error).message }, responseData: { totalPoints: 0, body: dynamic, httpResult: { error: (error as Error).message } } };
    }
  };

  return { datasetSearchNode, httpRequest468, lafModule };
}
