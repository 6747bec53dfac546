/** The code, readFiles (read-files.ts) and customFeedback node runners. */
import { dynamicParams } from '../../../domain/workflow/interpolate.js';
import type { NodeRunner } from '../../../domain/workflow/types.js';
import { untilCut } from './call-cut.js';
import { failureDetail, statusFailure } from './http-failure.js';
import type { NodeDeps } from './node-deps.js';
import { createReadFilesRunner } from './read-files.js';
import { ShownSecrets } from './shown-secrets.js';

type SandboxAnswer = { success?: boolean; data?: { codeReturn?: Record<string, unknown>; log?: string }; message?: string };

/** The sandbox's JSON answer, or undefined when it is not JSON (a proxy's error page). */
function parseSandboxAnswer(text: string): SandboxAnswer | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as SandboxAnswer) : undefined;
  } catch {
    return undefined;
  }
}

export function createExtraRunners(deps: NodeDeps): Record<string, NodeRunner> {
  const code: NodeRunner = async ({ params, node }) => {
    const variables = dynamicParams(node, params);
    const source = String(params.code ?? '');
    if (!deps.runSandbox) {
      // As the reference: the error output only (a text), no run-detail entry.
      return { outputs: { error: 'Can not find SANDBOX_URL in env' } };
    }
    // Credential-named inputs are masked in the run detail, and wherever the code's answer or log echoes them (shown-secrets.ts).
    const secrets = new ShownSecrets();
    const shownInputs = secrets.fields(variables);
    const runSandbox = deps.runSandbox;
    try {
      // Cut by the turn's hang-up, the run fails as a cancelled request (call-cut.ts) and the turn ends.
      const response = await untilCut(deps.signal, (signal) => runSandbox(JSON.stringify({ code: source, variables }), signal));
      const body = parseSandboxAnswer(response.text);
      if (response.status >= 400) throw statusFailure(response.status, body);
      if (!body?.success || typeof body.data?.codeReturn !== 'object' || body.data.codeReturn === null) throw Object.assign(new Error('Run code failed'), { data: body });
      const returned = body.data.codeReturn;
      return {
        outputs: { ...returned, system_rawResponse: returned },
        responseData: { customInputs: secrets.show(shownInputs), customOutputs: secrets.show(returned), codeLog: secrets.show(body.data.log ?? '') },
        toolResponses: returned,
      };
    } catch (error) {
      // The error output is an object, as the reference's (message, data, name, method, code, status).
      const detail = failureDetail(error, 'post');
      return { outputs: { error: detail }, responseData: { customInputs: secrets.show(shownInputs), customOutputs: {}, codeLog: '', error: secrets.show(detail) } };
    }
  };

  const readFiles = createReadFilesRunner(deps);

  /** The reference appends the text 60 s later; here it is saved with the AI item of this turn. */
  const customFeedback: NodeRunner = async ({ params, emit }) => {
    const text = String(params.system_textareaInput ?? '');
    if (!deps.chatId || !deps.responseChatItemId) emit({ event: 'fastAnswer', text: `\n\n[Custom feedback (not saved: no chatId)] ${text}` });
    else if (text) deps.customFeedbacks.push(text);
    return { responseData: { textOutput: text } };
  };

  return { code, readFiles, customFeedback };
}
