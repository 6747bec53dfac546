// What the hot-route benchmarks seed and call, shared by bench/hot-routes.mjs,
// bench/compare-builds.mjs and bench/oncpu-profile.mjs so that they measure the same data.

/** A chat app's workflow: start, then one LLM node answering the question. */
export const CHAT_GRAPH = {
  nodes: [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
    { nodeId: 'ai', flowNodeType: 'chatNode', name: 'AI chat', inputs: [{ key: 'model', value: 'fake-llm' }, { key: 'history', value: 0 }, { key: 'userChatInput', value: ['start', 'userChatInput'] }], outputs: [{ id: 'answerText', key: 'answerText', valueType: 'string' }] },
  ],
  edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'ai', targetHandle: 'ai-target-left' }],
};

/** What the fake LLM answers to every chat completion (non-streaming). */
export const FAKE_LLM_ANSWER = {
  id: 'x',
  object: 'chat.completion',
  created: 0,
  model: 'fake-llm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake model' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
};

/** The MODEL_CONFIG_PATH file's content naming the fake LLM at `requestUrl` (its chat completions URL). */
export function fakeLlmModels(requestUrl) {
  return JSON.stringify({ llmModels: [{ model: 'fake-llm', name: 'Fake LLM', maxContext: 16000, maxResponse: 4000, quoteMaxToken: 2000, charsPointsPrice: 0, requestUrl, requestAuth: 'sk-fake' }] });
}

/** `count` Ready nodes as `cluster nodes import` reads them, named node-00000 on. */
export function nodeItems(count) {
  return Array.from({ length: count }, (_, index) => {
    const name = `node-${String(index).padStart(5, '0')}`;
    return {
      metadata: { name, uid: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`, resourceVersion: String(index + 1), creationTimestamp: '2024-01-01T00:00:00Z', labels: { 'kubernetes.io/hostname': name, zone: `z${index % 3}` } },
      status: { capacity: { cpu: '8', memory: '32768000Ki', pods: '110' }, allocatable: { cpu: '8', memory: '32665600Ki', pods: '110' }, conditions: [{ type: 'Ready', status: 'True' }], nodeInfo: { kubeletVersion: 'v1.26.5', architecture: 'amd64' } },
    };
  });
}

/** POSTs a JSON body to a platform route of the server at `baseUrl`; the envelope's data, or throws. */
export async function postPlatform(baseUrl, path, { token, body, headers = {} } = {}) {
  const response = await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { token } : {}), ...headers }, body: JSON.stringify(body ?? {}) });
  const json = await response.json();
  if (json.code !== undefined && json.code !== 200) throw new Error(`${path}: ${JSON.stringify(json)}`);
  return json.data ?? json;
}

/**
 * Seeds an owner (through `cli`, which runs the service's CLI with its arguments and returns its
 * output) and a published chat app of CHAT_GRAPH; returns the completions request an app key makes.
 */
export async function seedChatCompletion(baseUrl, cli) {
  cli(['user', 'create', '--username', 'chat-owner', '--password', 'bench-password-1']);
  const token = (await postPlatform(baseUrl, '/api/support/user/account/loginByPassword', { body: { username: 'chat-owner', password: 'bench-password-1' } })).token;
  const appId = await postPlatform(baseUrl, '/api/core/app/create', { token, body: { name: 'chat', type: 'advanced', modules: CHAT_GRAPH.nodes, edges: CHAT_GRAPH.edges } });
  await postPlatform(baseUrl, `/api/core/app/version/publish?appId=${appId}`, { token, body: { ...CHAT_GRAPH, chatConfig: {}, isPublish: true, versionName: 'v1' } });
  const appKey = await postPlatform(baseUrl, '/api/support/openapi/create', { token, body: { name: 'bench', appId } });
  return { path: '/api/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${appKey}` }, body: { messages: [{ role: 'user', content: 'hello' }] } };
}
