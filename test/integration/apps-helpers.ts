import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { authHeaders } from '../helpers/platform.js';

/** Calls a platform route with a session; returns status and parsed body. */
export async function call(t: TestApp, token: string | null, method: string, url: string, payload?: unknown) {
  const isQuery = method === 'GET' || method === 'DELETE';
  let full = `/api${url}`;
  if (isQuery && payload && typeof payload === 'object') {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(payload as Record<string, unknown>)) if (v !== undefined) params.set(k, v === null ? '' : String(v));
    full += `?${params.toString()}`;
  }
  const response = await t.app.inject({
    method: method as 'GET',
    url: full,
    headers: token ? authHeaders(token) : {},
    ...(isQuery ? {} : { payload: (payload ?? {}) as Record<string, unknown> }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: tests read response data loosely
  let body: { code: number; statusText: string; message: string; data: any };
  try {
    body = response.json();
  } catch {
    body = { code: response.statusCode, statusText: '', message: response.body, data: null };
  }
  return { status: response.statusCode, body, data: body.data };
}

/** Calls and expects success; returns data. */
export async function ok(t: TestApp, token: string, method: string, url: string, payload?: unknown) {
  const r = await call(t, token, method, url, payload);
  expect(r.status, `${method} ${url}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.data;
}

export const simpleNodes = [
  { nodeId: 'workflowStartNodeId', flowNodeType: 'workflowStart', inputs: [], outputs: [] },
  { nodeId: 'chatNode', flowNodeType: 'chatNode', inputs: [{ key: 'userChatInput', value: ['workflowStartNodeId', 'userChatInput'] }], outputs: [] },
];

export async function createApp(t: TestApp, token: string, body: Record<string, unknown>): Promise<string> {
  return ok(t, token, 'POST', '/core/app/create', { type: 'simple', modules: simpleNodes, edges: [], ...body });
}

export async function createFolder(t: TestApp, token: string, name: string, parentId: string | null = null): Promise<string> {
  await ok(t, token, 'POST', '/core/app/folder/create', { name, parentId });
  const list = await ok(t, token, 'POST', '/core/app/list', { parentId, type: 'folder' });
  const found = list.find((a: { name: string }) => a.name === name);
  expect(found, `folder ${name}`).toBeTruthy();
  return found._id;
}
