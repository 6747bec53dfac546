/**
 * The public `/api/plugins/*` endpoints the workflow's HTTP node calls for the legacy system
 * plugins. Raw JSON replies (no envelope), as the reference.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { UserRegexTooCostlyError } from '../../../domain/user-regex.js';
import { TextTooLongError } from '../../../domain/workflow/interpolate.js';
import { Errors } from '../../../infra/errors.js';
import { type SelfCallScope, selfCallScope } from '../../../infra/self-call-token.js';
import { MAX_FREE_FORM_KEYS, zFreeFormRecord } from '../../../infra/zod.js';
import { z } from 'zod';
import { definePlatformRoute, type PlatformRouteOptions } from '../../define-route.js';
import { fillTemplate, tfSwitch } from './text-plugins.js';

const tags = ['system plugins'];
const methods: ['GET', 'POST'] = ['GET', 'POST'];
/**
 * The values a template is filled from: a node's dynamic inputs, which hold other nodes' outputs
 * (a search's quote list, an HTTP answer), hence ten times the bound of stored free-form objects.
 * Nothing here is stored; the bound keeps what a public request makes the server walk small.
 */
const zValues = zFreeFormRecord(10 * MAX_FREE_FORM_KEYS);
/**
 * The text to fill (any other JSON value is answered as sent). FastGPT 4.8.10 answers `{}` to a
 * body without it; a 400 naming the field tells a hand-written call what it forgot.
 */
const zTemplateText = z.unknown().nonoptional('missing (the text whose {{key}} placeholders are filled)');

export function registerPluginEndpoints(app: FastifyInstance): void {
  /** FastGPT's plugin templates call `/plugins/<name>`; the specification names `/plugins/<name>/index`: both are served. */
  const servePlugin = <S extends z.ZodType>(path: string, options: Omit<PlatformRouteOptions<S, [], unknown>, 'methods' | 'url' | 'auth' | 'raw'>) => {
    for (const url of [`${path}/index`, path]) definePlatformRoute(app, { ...options, methods, url, auth: [], raw: true });
  };
  /**
   * Writing feedback into chat items is for this service's own workflow runs only (as the
   * reference accepts only local calls), and only into the answer item of the chat the run
   * saves: the proof names it. The body's ids (which a graph author or a chatTest caller writes)
   * must be those or absent; a run that saves no chat writes nothing.
   */
  const runScopeOf = (request: FastifyRequest, body: { appId?: string; chatId?: string; responseChatItemId?: string }): SelfCallScope => {
    const scope = selfCallScope(request.headers, app.config.TOKEN_KEY);
    if (!scope) throw Errors.forbidden("The customFeedback plugin is called by this service's own workflow runs only");
    const named: [string | undefined, string][] = [
      [body.appId, scope.appId],
      [body.chatId, scope.chatId],
      [body.responseChatItemId, scope.dataId],
    ];
    if (named.some(([given, proven]) => given !== undefined && given !== '' && given !== proven)) {
      throw Errors.forbidden('The customFeedback plugin writes only into the answer of the chat its run saves');
    }
    return scope;
  };

  servePlugin('/plugins/TFSwitch', {
    // Without an input, FastGPT 4.8.10 answers false (its test reads any non-text input for its truth).
    input: z.object({ input: z.unknown().optional(), rule: z.string().optional() }),
    summary: 'True/false switch (raw JSON)',
    tags,
    handler: async ({ input, reply }) => {
      let result: boolean;
      try {
        result = tfSwitch(input.input, input.rule ?? '');
      } catch (error) {
        // The rule's patterns would cost more regex work than one request may do (user-regex.ts).
        if (error instanceof UserRegexTooCostlyError) throw Errors.missingParams(`Invalid field 'rule': ${error.message}`);
        throw error;
      }
      return reply.send(result ? { true: true } : { false: false });
    },
  });

  servePlugin('/plugins/textEditor', {
    input: z.object({ text: zTemplateText, DYNAMIC_INPUT_KEY: zValues }),
    summary: 'Fill {{key}} placeholders (v1 body: DYNAMIC_INPUT_KEY)',
    tags,
    handler: async ({ input, reply }) => reply.send({ text: typeof input.text === 'string' ? filledOrRefused('text', input.text, input.DYNAMIC_INPUT_KEY) : input.text }),
  });

  servePlugin('/plugins/textEditor/v2', {
    input: z.object({ text: zTemplateText, customInputs: zValues.optional() }),
    summary: 'Fill {{key}} placeholders (v2 body: customInputs)',
    tags,
    handler: async ({ input, reply }) => reply.send({ text: typeof input.text === 'string' ? filledOrRefused('text', input.text, input.customInputs ?? {}) : input.text }),
  });

  servePlugin('/plugins/customFeedback', {
    input: z.object({ appId: z.string().optional(), chatId: z.string().optional(), responseChatItemId: z.string().optional(), defaultFeedback: z.string().optional(), customFeedback: z.string().optional() }),
    summary: 'Add a custom feedback to a chat item (v1)',
    tags,
    handler: async ({ input, request, reply }) => {
      const scope = runScopeOf(request, input);
      const text = input.customFeedback || input.defaultFeedback || '';
      if (!text) return reply.send({ response: '' });
      app.chat.feedback.append(scope, text);
      const debug = !scope.chatId || !scope.dataId;
      return reply.send({ response: debug ? `\\n\\n**Custom feedback debug**: ${text}\\n\\n` : '' });
    },
  });

  servePlugin('/plugins/customFeedback/v2', {
    input: z.object({ appId: z.string().optional(), chatId: z.string().optional(), responseChatItemId: z.string().optional(), customFeedback: z.string().optional(), customInputs: zValues.optional() }),
    summary: 'Add a custom feedback to a chat item (v2)',
    tags,
    handler: async ({ input, request, reply }) => {
      const scope = runScopeOf(request, input);
      if (!input.customFeedback) return reply.send({});
      const text = filledOrRefused('customFeedback', input.customFeedback, input.customInputs ?? {}, false);
      app.chat.feedback.append(scope, text);
      const debug = !scope.chatId || !scope.dataId;
      return reply.send(debug ? { answerText: `\\n\\n**Custom feedback debug**: "${text}"\\n\\n`, text } : { text });
    },
  });
}

/** fillTemplate, with a fill that would outgrow its bound (TextTooLongError) a 400 naming `field`. */
function filledOrRefused(field: string, text: string, values: Record<string, unknown>, stringifyObjects?: boolean): string {
  try {
    return fillTemplate(text, values, stringifyObjects);
  } catch (error) {
    if (error instanceof TextTooLongError) throw Errors.missingParams(`Invalid field '${field}': ${error.message}`);
    throw error;
  }
}
