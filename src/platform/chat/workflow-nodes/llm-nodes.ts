/** The LLM-backed node runners: chatNode, classifyQuestion, contentExtract, cfr (query extension). */
import { selectHistories, valuesFileUrls, valuesText } from '../../../domain/workflow/chat-values.js';
import { MissingInputError, WorkflowError } from '../../../domain/workflow/dispatch.js';
import { recordsOf } from '../../../domain/workflow/input-shapes.js';
import { formatValueType } from '../../../domain/workflow/interpolate.js';
import { countTokens } from '../../../domain/token-count.js';
import {
  chatResponseTokens,
  extendedQueries,
  historyPreview,
  messagesToHistory,
  historyToMessages,
  type PromptMessage,
  queryExtensionRequest,
  renderQuotePrompt,
  renderQuotes,
  trimMessages,
} from '../../../domain/workflow/prompts.js';
import type { ChatItem, NodeRunner, NodeUsage } from '../../../domain/workflow/types.js';
import { chatRequestBody, completeChatOrCut, estimatePromptTokens, LlmError, type LlmMessage, streamChat } from '../../../infra/llm-stream.js';
import { CUT_MESSAGE } from './call-cut.js';
import { modelTemperature, modelUsage, type NodeDeps, nodeLlm, pointsFor, type ResolvedLlm } from './node-deps.js';
import { visionHistoryMessages, withVisionImages } from './vision-images.js';

/** One model call of a node: `temperature` on the provider's scale, `maxToken` the max_tokens asked for. */
async function callModel(deps: NodeDeps, llm: ResolvedLlm, messages: LlmMessage[], options: { temperature: number; maxToken: number; onDelta?: (t: string) => void }) {
  const request = chatRequestBody(llm.model, { messages, temperature: options.temperature, maxTokens: options.maxToken });
  const result = options.onDelta
    ? await streamChat(llm.endpoint, request, options.onDelta, deps.signal)
    : await completeChatOrCut(llm.endpoint, request, deps.signal);
  const inputTokens = result.promptTokens ?? estimatePromptTokens(messages);
  const outputTokens = result.completionTokens ?? countTokens(result.content);
  return Object.assign({}, result, { tokens: inputTokens + outputTokens, inputTokens, outputTokens, maxTokens: request.max_tokens, temperature: request.temperature });
}

/** Query extension (the cfr node, and dataset search's extension): the question first, then up to 3 rewrites, de-duplicated. */
export async function extendQuery(deps: NodeDeps, llm: ResolvedLlm, input: { question: string; background: string; histories: ChatItem[] }) {
  const messages: LlmMessage[] = [
    ...historyToMessages(input.histories),
    { role: 'user', content: queryExtensionRequest(input.question, input.background) },
  ];
  const result = await callModel(deps, llm, messages, { temperature: 0.1, maxToken: 300 });
  const queries = extendedQueries(input.question, result.content);
  // `cut`: the turn's hang-up cut the call, so `queries` holds no rewrite the model made (the caller records the cut).
  return { queries, reply: result.content, cut: result.cut === true, tokens: result.tokens, inputTokens: result.inputTokens, outputTokens: result.outputTokens, totalPoints: pointsFor(llm.model, result.tokens) };
}

/**
 * A node whose model call the turn's hang-up cut: it records the call (its model, tokens and
 * points, billed) and that it was cut, and no result it did not get (no class chosen, no field
 * extracted): its outputs stay unset and none of its branches is taken. The turn then ends, as
 * at any node boundary once it was aborted (dispatch.ts).
 */
function cutModelCall(node: { nodeId: string }, handles: string[], responseData: Record<string, unknown>, usage: NodeUsage) {
  return { skipHandleIds: handles.map((handle) => `${node.nodeId}-source-${handle}`), responseData: Object.assign(responseData, { error: CUT_MESSAGE }), usages: [usage] };
}

export function createLlmRunners(deps: NodeDeps): Record<string, NodeRunner> {
  const chatNode: NodeRunner = async ({ params, histories, query, stream, emit, node }) => {
    const llm = nodeLlm(deps, params.model);
    const question = typeof params.userChatInput === 'string' ? params.userChatInput : valuesText(query);
    const files = valuesFileUrls(query);
    if (!question && files.length === 0) throw new WorkflowError('Question is empty');
    const messages: PromptMessage[] = [];
    if (llm.model.defaultSystemChatPrompt) messages.push({ role: 'system', content: llm.model.defaultSystemChatPrompt });
    if (typeof params.systemPrompt === 'string' && params.systemPrompt) messages.push({ role: 'system', content: params.systemPrompt });
    if (typeof params.stringQuoteText === 'string' && params.stringQuoteText) {
      messages.push({ role: 'system', content: `<Documents>\n${params.stringQuoteText}\n</Documents>` });
    }
    const vision = llm.model.vision === true && formatValueType(params.aiChatVision ?? false, 'boolean') === true;
    // With vision, the history's user messages keep their images (sent with them below).
    const history = selectHistories(params.history ?? 6, histories);
    const fromHistory = vision ? visionHistoryMessages(history) : { messages: historyToMessages(history), imageLinks: new Map() };
    messages.push(...fromHistory.messages);
    let userText = question;
    if (Array.isArray(params.quoteQA)) {
      const quote = renderQuotes(recordsOf(params.quoteQA) as never[], String(params.quoteTemplate ?? ''), llm.model.quoteMaxToken);
      userText = renderQuotePrompt(String(params.quotePrompt ?? ''), quote, question);
    }
    messages.push({ role: 'user', content: userText });
    const trimmed = trimMessages(messages, llm.model.maxContext - 300);
    const streaming = stream && formatValueType(params.isResponseAnswerText ?? true, 'boolean') !== false;
    const { sent, questionImages } = vision ? await withVisionImages(deps, trimmed, query, fromHistory.imageLinks) : { sent: trimmed as LlmMessage[], questionImages: [] };
    const promptTokens = estimatePromptTokens(trimmed);
    const result = await callModel(deps, llm, sent, {
      temperature: modelTemperature(llm.model, params.temperature ?? 0),
      maxToken: chatResponseTokens(params.maxToken, llm.model, promptTokens),
      onDelta: streaming ? (text) => emit({ event: 'answer', text }) : undefined,
    });
    // A call cut by the client's hang-up answers what came before it (maybe nothing): that is
    // saved and billed as the turn's end, not failed as an empty answer.
    if (!result.content && !result.cut) throw new LlmError('LLM model response empty');
    // What was sent and the answer (system prompts and the quote-filled question included), as the reference.
    const sentImages = questionImages.length > 0 ? query.filter((value) => value.type === 'file' && value.file.type === 'image') : [];
    const completeHistory = messagesToHistory([...trimmed, { role: 'assistant', content: result.content }], sentImages);
    const totalPoints = pointsFor(llm.model, result.tokens);
    return {
      outputs: { answerText: result.content, history: completeHistory },
      responseData: {
        totalPoints,
        model: llm.model.name,
        tokens: result.tokens,
        query: question,
        maxToken: result.maxTokens,
        temperature: result.temperature,
        quoteList: Array.isArray(params.quoteQA) ? params.quoteQA : undefined,
        // The answer included, as the reference shows the context (its length is the app log's historyPreviewLength).
        historyPreview: historyPreview([...trimmed, { role: 'assistant', content: result.content }]),
        contextTotalLen: trimmed.length + 1,
      },
      usages: [modelUsage(node.name ?? 'AI chat', llm, totalPoints, result)],
      toolResponses: result.content,
    };
  };

  const classifyQuestion: NodeRunner = async ({ params, histories, node }) => {
    const agents = (Array.isArray(params.agents) ? params.agents : []) as { key: string; value: string }[];
    const question = String(params.userChatInput ?? '');
    if (!question) throw new MissingInputError('Input is empty', 'userChatInput');
    const llm = nodeLlm(deps, params.model);
    const list = agents.map((agent) => `{"typeId":"${agent.key}","description":"${agent.value}"}`).join('\n');
    const messages: LlmMessage[] = [
      ...historyToMessages(selectHistories(params.history ?? 6, histories)),
      {
        role: 'user',
        content: `Classify the question into one of these types. Background: ${String(params.systemPrompt ?? '')}\nTypes:\n${list}\nQuestion: """${question}"""\nAnswer with the typeId only.`,
      },
    ];
    const result = await callModel(deps, llm, messages, { temperature: 0.01, maxToken: 200 });
    const totalPoints = pointsFor(llm.model, result.tokens);
    const usage = modelUsage(node.name ?? 'Question classification', llm, totalPoints, result);
    const called = { totalPoints, model: llm.model.name, query: question, tokens: result.tokens, cqList: agents, contextTotalLen: messages.length };
    // Cut, the model chose nothing: no class (not the last one, the fallback of a reply naming none).
    if (result.cut) return cutModelCall(node, agents.map((a) => a.key), called, usage);
    const reply = result.content.trim();
    const chosen = agents.find((a) => reply.includes(a.key)) ?? agents.find((a) => reply.includes(a.value)) ?? agents[agents.length - 1];
    return {
      outputs: { cqResult: chosen?.value ?? '' },
      skipHandleIds: agents.filter((a) => a.key !== chosen?.key).map((a) => `${node.nodeId}-source-${a.key}`),
      responseData: Object.assign(called, { cqResult: chosen?.value ?? '' }),
      usages: [usage],
    };
  };

  const contentExtract: NodeRunner = async ({ params, histories, node }) => {
    if (!params.content) throw new MissingInputError('Input is empty', 'content');
    const llm = nodeLlm(deps, params.model);
    const keys = (Array.isArray(params.extractKeys) ? params.extractKeys : []) as { key: string; desc?: string; required?: boolean; defaultValue?: unknown; enum?: string; valueType?: string }[];
    const content = String(params.content ?? '');
    const schema = keys.map((k) => `"${k.key}": ${k.desc ?? ''}${k.enum ? ` (one of: ${k.enum.split('\n').join(', ')})` : ''}`).join('\n');
    const messages: LlmMessage[] = [
      ...historyToMessages(selectHistories(params.history ?? 6, histories)),
      {
        role: 'user',
        content: `${String(params.description ?? '')}\nExtract these fields from the text as one JSON object:\n${schema}\nText: """${content}"""\nReply with the JSON object only.`,
      },
    ];
    const result = await callModel(deps, llm, messages, { temperature: 0.01, maxToken: 500 });
    const totalPoints = pointsFor(llm.model, result.tokens);
    const usage = modelUsage(node.name ?? 'Content extraction', llm, totalPoints, result);
    const called = { totalPoints, model: llm.model.name, query: content, tokens: result.tokens, extractDescription: params.description };
    // Cut, nothing was extracted: no fields, no `success` (not the required keys' defaults).
    if (result.cut) return cutModelCall(node, [], called, usage);
    let parsed: Record<string, unknown> = {};
    const start = result.content.indexOf('{');
    const end = result.content.lastIndexOf('}');
    try {
      if (start >= 0 && end > start) parsed = JSON.parse(result.content.slice(start, end + 1)) as Record<string, unknown>;
    } catch {
      parsed = {};
    }
    // Unknown and empty keys are dropped, required ones fall back to their default; success means every key has a value.
    const fields: Record<string, unknown> = {};
    for (const key of keys) {
      const value = parsed[key.key];
      // (A null the model wrote stays null: the reference does not type these values.)
      if (value !== undefined && value !== '') fields[key.key] = key.valueType && value !== null ? formatValueType(value, key.valueType) : value;
      else if (key.required) fields[key.key] = key.defaultValue || '';
    }
    const success = keys.every((key) => key.key in fields);
    return {
      outputs: { success, fields: JSON.stringify(fields), ...fields },
      responseData: Object.assign(called, { extractResult: fields }),
      usages: [usage],
    };
  };

  const queryExtension: NodeRunner = async ({ params, histories, node }) => {
    const question = String(params.userChatInput ?? '');
    if (!question) throw new MissingInputError('Question is empty', 'userChatInput');
    const llm = nodeLlm(deps, params.model);
    const extended = await extendQuery(deps, llm, { question, background: String(params.systemPrompt ?? ''), histories: selectHistories(params.history ?? 6, histories) });
    const usage = modelUsage(node.name ?? 'Query extension', llm, extended.totalPoints, extended);
    const called = { totalPoints: extended.totalPoints, model: llm.model.name, tokens: extended.tokens, query: question };
    // Cut, the model rewrote nothing: no text (not the question alone, as a reply without rewrites gives).
    if (extended.cut) return cutModelCall(node, [], called, usage);
    const text = JSON.stringify(extended.queries);
    return {
      outputs: { system_text: text },
      responseData: Object.assign(called, { textOutput: text }),
      usages: [usage],
    };
  };

  return { chatNode, classifyQuestion, contentExtract, cfr: queryExtension };
}
