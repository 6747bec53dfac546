/**
 * The `tools` (agent) node with the tool_choice strategy: the nodes attached by `selectedTools`
 * edges are offered as functions (name = nodeId, description = intro, parameters = inputs with a
 * toolDescription). Each call runs a nested dispatch with that node as the entry; its tool
 * response goes back to the model until it answers without calling a tool (at most 30 rounds)
 * or a stopTool node ran. A streamed run streams every round (tool-stream.ts). With the vision
 * switch on a vision model, the question's and the history's images are sent (vision-images.ts).
 */

import { textHead, textTail } from '../../../domain/text-cut.js';
import { selectHistories, valuesText } from '../../../domain/workflow/chat-values.js';
import { withUsagesBefore } from '../../../domain/workflow/failure-usages.js';
import { formatValueType } from '../../../domain/workflow/interpolate.js';
import { parseLooseJson } from '../../../domain/workflow/loose-json.js';
import { toolResponseText } from '../../../domain/workflow/tool-response.js';
import { countTokens } from '../../../domain/token-count.js';
import { historyPreview, historyToMessages, type PromptMessage, responseTokenLimit } from '../../../domain/workflow/prompts.js';
import { type ChatValue, type NodeRunner, type NodeUsage, type RuntimeNode, SELECTED_TOOLS_HANDLE, type ToolValue } from '../../../domain/workflow/types.js';
import { deepClone } from '../../../infra/deep-clone.js';
import { chatRequestBody, completeChatOrCut, estimatePromptTokens, type LlmMessage } from '../../../infra/llm-stream.js';
import { nanoid } from '../../../infra/random-string.js';
import { dispatchNested } from './nested-run.js';
import { modelTemperature, modelUsage, type NodeDeps, nodeLlm, pointsFor } from './node-deps.js';
import { streamToolRound, type ToolRoundHandlers } from './tool-stream.js';
import { visionHistoryMessages, withVisionImages } from './vision-images.js';

/** Model calls per run of the node, as the reference's `maxRunToolTimes`. */
const MAX_ROUNDS = 30;

/** The message with its text parts only (a vision message's images left out). */
function asText(message: LlmMessage): LlmMessage {
  if (!Array.isArray(message.content)) return message;
  return { ...message, content: message.content.flatMap((part) => (part.type === 'text' && typeof part.text === 'string' ? [part.text] : [])).join('\n') };
}

/** A message of the agent's conversation as the response detail shows it: text only (a tool's answer as the AI's). */
function previewMessage(message: LlmMessage): PromptMessage[] {
  const { content } = asText(message);
  if (typeof content !== 'string' || !content) return [];
  const role = message.role === 'tool' ? 'assistant' : message.role;
  return role === 'system' || role === 'user' || role === 'assistant' ? [{ role, content }] : [];
}

/**
 * What the tool's nodes produced stays readable by the nodes after the agent (the reference runs
 * a tool on the run's own nodes; ours runs on copies, so the output values are copied back).
 */
function keepOutputs(ran: readonly RuntimeNode[], runtimeNodes: readonly RuntimeNode[]): void {
  const byId = new Map(runtimeNodes.map((node) => [node.nodeId, node]));
  for (const node of ran) {
    const original = byId.get(node.nodeId);
    if (!original) continue;
    for (const output of node.outputs) {
      if (output.value === undefined) continue;
      const target = original.outputs.find((candidate) => candidate.key === output.key);
      if (target) target.value = output.value;
    }
  }
}

const cut = (text: string) => (text.length > 1000 ? `${textHead(text, 500)}...${textTail(text, 500)}` : text);

function toolSchema(node: RuntimeNode) {
  const params = node.inputs.filter((input) => input.toolDescription);
  return {
    type: 'function' as const,
    function: {
      name: node.nodeId,
      description: node.intro || node.name || node.nodeId,
      parameters: {
        type: 'object',
        properties: Object.fromEntries(
          params.map((input) => [input.key, { type: input.valueType === 'number' ? 'number' : input.valueType === 'boolean' ? 'boolean' : 'string', description: input.toolDescription }]),
        ),
        required: params.filter((input) => input.required).map((input) => input.key),
      },
    },
  };
}

export function createToolRunner(deps: NodeDeps, nestedRunners: () => Record<string, NodeRunner>): NodeRunner {
  return async (run) => {
    const { node, params, histories, query, runtimeNodes, runtimeEdges, variables, stream, emit, isAborted } = run;
    const llm = nodeLlm(deps, params.model);
    const toolIds = runtimeEdges.filter((e) => e.source === node.nodeId && e.sourceHandle === SELECTED_TOOLS_HANDLE).map((e) => e.target);
    const tools = runtimeNodes.filter((n) => toolIds.includes(n.nodeId));
    const question = String(params.userChatInput ?? valuesText(query));
    const prompt: PromptMessage[] = [];
    if (typeof params.systemPrompt === 'string' && params.systemPrompt) prompt.push({ role: 'system', content: params.systemPrompt });
    // The vision switch on a vision model, as the AI chat node: the question's and the history's images go with their messages.
    const vision = llm.model.vision === true && formatValueType(params.aiChatVision ?? false, 'boolean') === true;
    const history = selectHistories(params.history ?? 6, histories);
    const fromHistory = vision ? visionHistoryMessages(history) : { messages: historyToMessages(history), imageLinks: new Map() };
    prompt.push(...fromHistory.messages, { role: 'user', content: question });
    const messages: LlmMessage[] = vision ? (await withVisionImages(deps, prompt, query, fromHistory.imageLinks)).sent : [...prompt];

    const assistant: ChatValue[] = [];
    const details: Record<string, unknown>[] = [];
    let inputTokens = 0;
    let outputTokens = 0;
    let answer = '';
    // What the tools' own nodes used (searches, nested model calls): billed with the agent's call.
    const toolUsages: NodeUsage[] = [];
    let stopped = false;
    const toolOf = (name: string) => tools.find((t) => t.nodeId === name);
    // Streaming, a round's text goes out as it arrives and each call is announced as it starts
    // (its arguments following in pieces), as the reference streams its tool-calling rounds.
    const roundEvents: ToolRoundHandlers = {
      onText: (text) => emit({ event: 'answer', text }),
      onToolCall: (call) => {
        const tool = toolOf(call.function.name);
        emit({ event: 'toolCall', tool: { id: call.id, toolName: tool?.name ?? call.function.name, toolAvatar: tool?.avatar ?? '', functionName: call.function.name, params: call.function.arguments, response: '' } });
      },
      onToolParams: (call, fragment) => emit({ event: 'toolParams', tool: { id: call.id, toolName: '', toolAvatar: '', params: fragment, response: '' } }),
    };
    // A round or a tool failing ends the turn: the rounds that answered and the tools that ran are billed all the same.
    const usedSoFar = (): NodeUsage[] => [modelUsage(node.name ?? 'Tool call', llm, pointsFor(llm.model, inputTokens + outputTokens), { tokens: inputTokens + outputTokens, inputTokens, outputTokens }), ...toolUsages];
    try {
      for (let round = 0; round < MAX_ROUNDS && !isAborted() && !stopped; round += 1) {
        if (round > 0 && node.showStatus) emit({ event: 'flowNodeStatus', status: 'running', name: node.name ?? node.flowNodeType });
        const request = chatRequestBody(llm.model, {
          messages,
          temperature: modelTemperature(llm.model, params.temperature ?? 0),
          maxTokens: responseTokenLimit(params.maxToken, llm.model.maxResponse),
          extra: tools.length > 0 ? { tools: tools.map(toolSchema), tool_choice: 'auto' } : undefined,
        });
        const result = stream ? await streamToolRound(llm.endpoint, request, roundEvents, () => nanoid(), deps.signal) : await completeChatOrCut(llm.endpoint, request, deps.signal);
        // An estimate counts text: an image's data URL is no measure of what the model counts for it.
        inputTokens += result.promptTokens ?? estimatePromptTokens(messages.map(asText));
        outputTokens += result.completionTokens ?? countTokens(result.content);
        // The client hung up: what the round said is the answer, and no call runs (a cut round has none).
        if (!result.toolCalls?.length || result.cut || isAborted()) {
          answer = result.content;
          break;
        }
        messages.push({ role: 'assistant', content: result.content || null, tool_calls: result.toolCalls });
        // Text the model wrote beside its calls ("Let me check…") is part of the answer, as in the reference.
        if (result.content) assistant.push({ type: 'text', text: { content: result.content } });
        const value: ToolValue = { type: 'tool', tools: [] };
        // What the called tools answered is part of the agent's answer, before the round's tool item (as the reference).
        const toolAnswers: ChatValue[] = [];
        for (const call of result.toolCalls) {
          const tool = toolOf(call.function.name);
          let args: Record<string, unknown> = {};
          try {
            // Models write loose JSON at times (comments, trailing commas); the reference reads it as JSON5.
            const parsed = parseLooseJson(call.function.arguments || '{}');
            args = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
          } catch {
            args = {};
          }
          if (!stream) roundEvents.onToolCall(call);
          let response = `Unknown tool ${call.function.name}`;
          if (tool) {
            const entry: RuntimeNode = { ...deepClone(tool), isEntry: true };
            // Only the parameters the tool's schema offers: any other input (an HTTP tool's URL
            // beside its secret headers) is the app's, not the model's or its user's, to set.
            entry.inputs = entry.inputs.map((input) => (input.toolDescription && Object.hasOwn(args, input.key) ? { ...input, value: args[input.key] } : input));
            const toolRunNodes = runtimeNodes.map((n) => (n.nodeId === tool.nodeId ? entry : { ...deepClone(n), isEntry: false }));
            const nested = await dispatchNested(run, {
              nodes: toolRunNodes,
              edges: runtimeEdges.map((e) => ({ ...e, status: 'waiting' as const })),
              // Shared: a tool that updates a variable updates it for the rest of the run, as in the reference.
              variables,
              histories,
              query,
              runners: nestedRunners(),
              // What the tool's own nodes answer streams as they answer it (a model node's tokens, an
              // answer node's text); as a tool call, a node shows no status and stops for no user.
              emit: (event) => {
                if (event.event !== 'flowNodeStatus' && event.event !== 'interactive') emit(event);
              },
            });
            keepOutputs(toolRunNodes, runtimeNodes);
            response = toolResponseText(nested.toolResponses, valuesText(nested.assistantResponses));
            toolAnswers.push(...nested.assistantResponses);
            details.push(...nested.flowResponses);
            if (nested.flowResponses.some((r) => r.toolStop === true)) stopped = true;
            toolUsages.push(...nested.flowUsages);
          }
          emit({ event: 'toolResponse', tool: { id: call.id, toolName: '', toolAvatar: '', params: '', response: cut(response) } });
          value.tools.push({ id: call.id, toolName: tool?.name ?? call.function.name, toolAvatar: tool?.avatar ?? '', functionName: call.function.name, params: call.function.arguments, response: cut(response) });
          messages.push({ role: 'tool', tool_call_id: call.id, content: response });
        }
        assistant.push(...toolAnswers.filter((item) => item.type !== 'interactive'), value);
      }
    } catch (error) {
      throw withUsagesBefore(error, inputTokens + outputTokens > 0 ? usedSoFar() : toolUsages);
    }
    if (answer) assistant.push({ type: 'text', text: { content: answer } });
    const tokens = inputTokens + outputTokens;
    const totalPoints = pointsFor(llm.model, tokens);
    const toolPoints = toolUsages.reduce((sum, usage) => sum + usage.totalPoints, 0);
    const preview = historyPreview([...messages, ...(answer ? [{ role: 'assistant' as const, content: answer }] : [])].flatMap(previewMessage));
    // The node's text output is all it said, across rounds (the reference joins its text values).
    const answerText = assistant.flatMap((value) => (value.type === 'text' ? [value.text.content] : [])).join('');
    return {
      outputs: { answerText },
      assistantResponses: assistant,
      responseData: {
        totalPoints: totalPoints + toolPoints,
        toolCallTokens: tokens,
        model: llm.model.name,
        query: question,
        historyPreview: preview,
        toolDetail: details,
        ...(stopped ? { toolStop: true } : {}),
      },
      usages: usedSoFar(),
      toolResponses: answer,
    };
  };
}
