/**
 * Importing FastGPT 4.8.10 workflow exports as its editor stores them (`core/app/create` with
 * modules/edges/chatConfig, then `core/app/version/publish`) and reading what a run did.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { TestApp } from '../helpers/app.js';
import { ok } from './apps-helpers.js';

export interface WorkflowExport {
  nodes: Record<string, unknown>[];
  edges: Record<string, unknown>[];
  chatConfig?: Record<string, unknown>;
}

const FIXTURES = fileURLToPath(new URL('../fixtures/workflows/', import.meta.url));

/** A fixture from test/fixtures/workflows (a fresh copy each time). */
export function loadWorkflow(name: string): WorkflowExport {
  return JSON.parse(readFileSync(`${FIXTURES}${name}.json`, 'utf8')) as WorkflowExport;
}

type Input = { key: string; value?: unknown };

/** Sets one input of one node in an export (URLs of local test servers and the like). */
export function setInput(workflow: WorkflowExport, nodeId: string, key: string, value: unknown): void {
  const node = workflow.nodes.find((n) => n.nodeId === nodeId);
  const input = (node?.inputs as Input[] | undefined)?.find((i) => i.key === key);
  if (!input) throw new Error(`fixture has no input ${nodeId}.${key}`);
  input.value = value;
}

/** Creates the app with the export's modules/edges/chatConfig, then publishes them (the 4.8.10 editor's two calls). */
export async function importWorkflow(t: TestApp, token: string, name: string, workflow: WorkflowExport, type: 'simple' | 'advanced' | 'plugin' = 'advanced'): Promise<string> {
  const graph = { nodes: workflow.nodes, edges: workflow.edges, chatConfig: workflow.chatConfig ?? {} };
  const appId = (await ok(t, token, 'POST', '/core/app/create', { name, type, modules: graph.nodes, edges: graph.edges, chatConfig: graph.chatConfig })) as string;
  await ok(t, token, 'POST', `/core/app/version/publish?appId=${appId}`, { ...graph, type, isPublish: true, versionName: 'imported' });
  return appId;
}

type NodeResponse = { nodeId: string; moduleType: string; [key: string]: unknown };

/** The node ids that produced a response, in run order. */
export const ranNodes = (body: { responseData: NodeResponse[] }) => body.responseData.map((r) => r.nodeId);

export const responseOf = (body: { responseData: NodeResponse[] }, nodeId: string) => body.responseData.find((r) => r.nodeId === nodeId);

/** A local JSON service recording what it received; `answer` decides the reply per request. */
export async function startJsonService(answer: (request: { url: string; method: string; body: unknown }) => unknown) {
  const received: { url: string; method: string; headers: IncomingMessage['headers']; body: unknown }[] = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        // kept as text
      }
      const request = { url: req.url ?? '/', method: req.method ?? 'GET', headers: req.headers, body };
      received.push(request);
      const reply = answer(request);
      res.writeHead(200, { 'content-type': typeof reply === 'string' ? 'text/html' : 'application/json' });
      res.end(typeof reply === 'string' ? reply : JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
