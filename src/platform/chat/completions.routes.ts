/** v1/chat/completions, chatTest and workflow/debug. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { tokenTotals } from '../../domain/usage-points.js';
import { answerContent, messagesToChatItems, type RequestMessage } from '../../domain/workflow/messages.js';
import type { RuntimeEdge, RuntimeNode, StoreEdge, StoreNode } from '../../domain/workflow/types.js';
import { errorAnswer } from '../../infra/error-render.js';
import { Errors } from '../../infra/errors.js';
import { nanoid } from '../../infra/random-string.js';
import { abortOnClose } from '../../infra/request-abort.js';
import { boundBodiesByCaller } from '../auth/proven-caller-bodies.js';
import { definePlatformRoute } from '../define-route.js';
import { chatTestSchema, completionsSchema, debugSchema } from './chat.schema.js';
import { callerFromAuth } from './chat-caller.js';
import type { ChatModule } from './chat-module.js';
import type { ChatTurnRequest } from './chat-run.service.js';
import { admitCompletion, finishTurn } from './completion-admission.js';
import { questionWithStoredImages, runKeepingStoredImages } from './inline-images.js';
import { responseViewOf, shownResponses } from './messages.js';
import { SseWriter, textChunk, usageChunk } from './sse.js';

/**
 * An error met while streaming, as the central handler would render it (a database outage is a
 * 503, a bug an internal error with the request id and no internals), for the SSE error frame:
 * with OpenAI's `error` object, without which OpenAI SDKs yield the frame as an empty chunk.
 */
function streamedError(error: unknown, request: FastifyRequest, what: string) {
  const { rendered } = errorAnswer(error, request, { openAi: true, refused: `${what} refused while streaming`, failed: `${what} failed while streaming` });
  return { status: rendered.status, frame: rendered.body };
}

export function registerCompletionRoutes(app: FastifyInstance, chat: ChatModule): void {
  const stallTimeoutMs = app.config.RESPONSE_STALL_TIMEOUT_MS;
  const bodyLimit = app.config.BODY_LIMIT_BYTES;
  boundBodiesByCaller(app, [`${app.prefix}/v1/chat/completions`]);
  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/v1/chat/completions',
    auth: ['outLink', 'teamSpace', 'apiKey', 'session'],
    appBoundKey: true,
    startsShareChat: true,
    openAiErrors: true,
    input: completionsSchema,
    raw: true,
    summary: 'OpenAI-compatible chat completions running the app workflow (SSE when stream=true)',
    tags: ['chat'],
    handler: async ({ input, auth: credential, request, reply }) => {
      const admitted = await admitCompletion(chat, credential, input, request.ip);
      const { app, isPlugin, caller } = admitted;
      const question = await questionWithStoredImages(chat.inlineImages, admitted, input.chatId, bodyLimit);
      const runTurn = (turn: ChatTurnRequest) => runKeepingStoredImages(chat.inlineImages, caller.auth.teamId, question.fileIds, () => chat.run.runTurn(turn));
      const detail = input.detail || isPlugin;
      const responseChatItemId = input.responseChatItemId ?? nanoid();
      const controller = abortOnClose(request, reply);
      const created = Math.floor(chat.now() / 1000);
      // The chat's id, as the answer without stream has it; a turn of no chat gets one of its own.
      const stamp = { id: input.chatId || `chatcmpl-${responseChatItemId}`, created };
      const writer = input.stream ? new SseWriter(reply, detail, stamp, stallTimeoutMs) : undefined;
      // What the caller sees of the node responses, streamed or not (a share link's responseDetail included).
      const view = responseViewOf(caller, isPlugin);
      const turn = {
        app,
        caller,
        chatId: input.chatId,
        chat: admitted.existing,
        items: question.items,
        variables: input.variables,
        responseChatItemId,
        stream: input.stream,
        mode: 'chat' as const,
        emit: writer ? writer.emit.bind(writer) : () => undefined,
        drained: writer ? () => writer.drained() : undefined,
        signal: controller.signal,
        save: true,
        originIp: request.ip,
        metadata: input.metadata,
      };
      if (!writer) {
        const result = await runTurn(turn);
        finishTurn(chat, admitted, result.flowResponses);
        const responses = shownResponses(result.flowResponses, view);
        return reply.send({
          id: input.chatId ?? '',
          object: 'chat.completion',
          created,
          model: '',
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 1 },
          choices: [{ message: { role: 'assistant', content: answerContent(result.assistantResponses, detail) }, finish_reason: 'stop', index: 0 }],
          ...(detail ? { responseData: responses, newVariables: result.newVariables } : {}),
        });
      }
      writer.start();
      // OpenAI opens every stream with the role: its SDKs' stream helpers refuse an answer whose
      // chunks never named one (a workflow that answers no text).
      writer.write('answer', textChunk('', 'open', stamp));
      try {
        const result = await runTurn(turn);
        finishTurn(chat, admitted, result.flowResponses);
        writer.write('answer', textChunk('', 'finish', stamp));
        if (input.stream_options?.include_usage) writer.write('answer', usageChunk(tokenTotals(result.flowUsages), stamp));
        writer.write('answer', '[DONE]');
        // Without detail for this caller, no frame at all (the non-stream answer's list is empty).
        if (detail && view.detail) writer.write('flowResponses', shownResponses(result.flowResponses, view));
      } catch (error) {
        writer.write('error', streamedError(error, request, 'chat completion').frame);
      }
      writer.end();
      return reply;
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/chat/chatTest',
    auth: ['session'],
    input: chatTestSchema,
    raw: true,
    summary: "Runs the editor's unsaved graph as a debug chat (always SSE, nothing saved)",
    tags: ['chat'],
    handler: async ({ input, auth, request, reply }) => {
      const { app: appDoc } = await chat.apps.authorize(auth, input.appId, 'read');
      const items = messagesToChatItems(input.messages as RequestMessage[]);
      if (appDoc.type !== 'plugin' && items.length === 0) throw Errors.missingParams('Params Error: messages must end with the question');
      const guard = await chat.access.assertCallerGraph(auth, input.nodes);
      const controller = abortOnClose(request, reply);
      const responseChatItemId = nanoid();
      const writer = new SseWriter(reply, true, { id: `chatcmpl-${responseChatItemId}`, created: Math.floor(chat.now() / 1000) }, stallTimeoutMs);
      try {
        const graph = { nodes: input.nodes as unknown as StoreNode[], edges: input.edges as unknown as StoreEdge[], chatConfig: input.chatConfig ?? {} };
        const result = await chat.run.runTurn({
          app: appDoc,
          graph,
          guard,
          caller: callerFromAuth(auth),
          items,
          variables: input.variables,
          responseChatItemId,
          stream: true,
          mode: 'test',
          emit: writer.emit.bind(writer),
          drained: () => writer.drained(),
          signal: controller.signal,
          save: false,
          appName: input.appName ?? appDoc.name,
        });
        writer.start();
        writer.write('answer', '[DONE]');
        writer.write('flowResponses', result.flowResponses);
      } catch (error) {
        const { status, frame } = streamedError(error, request, 'chat test');
        writer.start(status);
        writer.write('error', frame);
      }
      writer.end();
      return reply;
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/workflow/debug',
    auth: ['session'],
    input: debugSchema,
    summary: 'Runs the entry nodes of a graph once and reports the next nodes',
    tags: ['chat'],
    handler: async ({ input, auth, request, reply }) => {
      const { app: appDoc } = await chat.apps.authorize(auth, input.appId, 'read');
      const guard = await chat.access.assertCallerGraph(auth, input.nodes);
      const controller = abortOnClose(request, reply);
      const edges = (input.edges as unknown as RuntimeEdge[]).map((edge) => ({ ...edge, status: edge.status ?? 'waiting' }));
      return chat.run.debugRun({ app: appDoc, caller: callerFromAuth(auth), nodes: input.nodes as RuntimeNode[], edges, variables: input.variables, signal: controller.signal, guard });
    },
  });
}
