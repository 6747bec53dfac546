/**
 * Built-in system plugins ("community-*" ids). Each declares its inputs and outputs (for the
 * node template) and a callback the workflow engine runs through `app.apps.runSystemPlugin`.
 */
import { UserRegexTooCostlyError } from '../../../domain/user-regex.js';
import { WorkflowError } from '../../../domain/workflow/workflow-error.js';
import { zonedDateTime } from '../../../domain/zoned-time.js';
import { Errors } from '../../../infra/errors.js';
import { type SafeFetchOptions, safeFetch } from '../../../infra/outbound-fetch.js';
import { evaluateMathExpression, MathExpressionError } from './math-expression.js';
import { fillTemplate, tfSwitch } from './text-plugins.js';

export interface SystemPluginContext {
  fetchOptions: SafeFetchOptions;
  now?: () => Date;
  /** The run's abort signal (a chat turn whose client hung up): the plugin's own calls are cut by it. */
  signal?: AbortSignal;
}

export interface PluginField {
  key: string;
  label: string;
  valueType: string;
  description: string;
  required?: boolean;
  defaultValue?: unknown;
  /** Other keys the same input had in FastGPT 4.8 node templates (exported workflows carry them). */
  aliases?: string[];
}

export interface SystemPlugin {
  id: string;
  name: string;
  intro: string;
  avatar: string;
  author: string;
  templateType: string;
  isTool: boolean;
  inputs: PluginField[];
  outputs: PluginField[];
  /**
   * Runs for workflows that name it, but is not offered in the plugin list: the 4.8.x plugins that
   * 4.8.10 made node types (textEditor, customFeedback) or dropped (TFSwitch).
   */
  unlisted?: true;
  run(inputs: Record<string, unknown>, context: SystemPluginContext): Promise<Record<string, unknown>>;
}

const field = (key: string, valueType: string, description: string, extra: Partial<PluginField> = {}): PluginField => ({ key, label: key, valueType, description, ...extra });

/**
 * Drops `<script>`, `<style>` and `<noscript>` elements with one forward scan: the lazy regex
 * doing it restarted at every unclosed opening tag, quadratic on a hostile page.
 */
function dropHiddenElements(html: string): string {
  // ASCII-only lower case keeps every index of the original.
  const lower = html.replace(/[A-Z]+/g, (s) => s.toLowerCase());
  const opening = /<(script|style|noscript)/g;
  let out = '';
  let pos = 0;
  for (;;) {
    opening.lastIndex = pos;
    const open = opening.exec(lower);
    if (!open) return out + html.slice(pos);
    out += `${html.slice(pos, open.index)} `;
    const close = lower.indexOf(`</${open[1]}`, open.index);
    const end = close === -1 ? -1 : lower.indexOf('>', close);
    if (end === -1) return out;
    pos = end + 1;
  }
}

function htmlToText(html: string): string {
  return dropHiddenElements(html)
    .replace(/<br\s*\/?>|<\/(p|div|li|h[1-6]|tr)>/gi, '\n')
    // No '<' inside a tag: each attempt stops at the next '<', so the time stays linear.
    .replace(/<[^<>]+>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/[ \t]+/g, ' ')
    .replace(/\n\s*\n+/g, '\n\n')
    .trim();
}

export const SYSTEM_PLUGINS: SystemPlugin[] = [
  {
    id: 'community-getTime',
    name: 'Current time',
    intro: 'Returns the current date and time.',
    avatar: '/imgs/workflow/getCurrentTime.svg',
    author: 'platform',
    templateType: 'tools',
    isTool: true,
    inputs: [field('timezone', 'string', 'IANA time zone, e.g. Europe/Paris (default UTC)')],
    outputs: [field('time', 'string', 'Current time as YYYY-MM-DD HH:mm:ss')],
    async run(inputs, context) {
      const timeZone = typeof inputs.timezone === 'string' && inputs.timezone ? inputs.timezone : 'UTC';
      // A zone the caller names and this runtime does not know is the caller's mistake: refused, not read as UTC.
      const zoned = zonedDateTime((context.now ?? (() => new Date()))(), timeZone);
      if (!zoned) throw Errors.missingParams(`Invalid field 'timezone': unknown time zone ${timeZone}`);
      return { time: zoned.dateTime };
    },
  },
  {
    id: 'community-mathExprVal',
    name: 'Math expression',
    intro: 'Evaluates an arithmetic expression such as (2 + 3) * sqrt(16).',
    avatar: '/imgs/workflow/mathExprEval.svg',
    author: 'platform',
    templateType: 'tools',
    isTool: true,
    inputs: [field('expr', 'string', 'The arithmetic expression', { required: true, aliases: ['数学表达式'] })],
    outputs: [field('result', 'string', 'The value, or the error when the expression is invalid')],
    async run(inputs) {
      const expr = typeof inputs.expr === 'string' ? inputs.expr : String(inputs.expr ?? '');
      try {
        return { result: String(evaluateMathExpression(expr)) };
      } catch (error) {
        if (error instanceof MathExpressionError) return { result: `Invalid expression: ${error.message}` };
        throw error;
      }
    },
  },
  {
    id: 'community-fetchUrl',
    name: 'Fetch URL',
    intro: 'Reads a public web page and returns its text.',
    avatar: '/imgs/workflow/fetchUrl.svg',
    author: 'platform',
    templateType: 'tools',
    isTool: true,
    inputs: [field('url', 'string', 'The page address (http or https)', { required: true })],
    outputs: [field('result', 'string', 'The page text')],
    async run(inputs, context) {
      const url = typeof inputs.url === 'string' ? inputs.url.trim() : '';
      if (!url) throw Errors.missingParams("Invalid field 'url': required");
      const response = await safeFetch(url, context.signal ? { ...context.fetchOptions, signal: context.signal } : context.fetchOptions);
      const text = response.text();
      const html = (response.headers['content-type'] ?? '').includes('html') || /^\s*</.test(text);
      return { result: html ? htmlToText(text) : text };
    },
  },
  {
    id: 'community-textEditor',
    name: 'Text editor',
    intro: 'Fills {{key}} placeholders of a text with the given values.',
    avatar: 'core/workflow/template/textConcat',
    author: 'platform',
    unlisted: true,
    templateType: 'tools',
    isTool: false,
    inputs: [field('text', 'string', 'Text with {{key}} placeholders', { required: true, aliases: ['文本'] }), field('customInputs', 'object', 'Values by key')],
    outputs: [field('text', 'string', 'The filled text')],
    async run(inputs) {
      const values = inputs.customInputs && typeof inputs.customInputs === 'object' ? (inputs.customInputs as Record<string, unknown>) : {};
      return { text: typeof inputs.text === 'string' ? fillTemplate(inputs.text, values) : inputs.text };
    },
  },
  {
    id: 'community-TFSwitch',
    name: 'True/false switch',
    intro: 'Outputs false for empty, "false", "0", "null" or text matching a rule line, else true.',
    avatar: 'core/workflow/template/ifelse',
    author: 'platform',
    unlisted: true,
    templateType: 'tools',
    isTool: false,
    inputs: [field('input', 'any', 'The value to test', { required: true }), field('rule', 'string', 'Lines of exact texts or /regex/flags that mean false')],
    outputs: [field('true', 'boolean', 'Set when true'), field('false', 'boolean', 'Set when false')],
    async run(inputs) {
      try {
        return tfSwitch(inputs.input, typeof inputs.rule === 'string' ? inputs.rule : '') ? { true: true } : { false: false };
      } catch (error) {
        if (error instanceof UserRegexTooCostlyError) throw new WorkflowError(`System plugin TFSwitch, input 'rule': ${error.message}`);
        throw error;
      }
    },
  },
  {
    id: 'community-customFeedback',
    name: 'Custom feedback',
    intro: 'Adds a feedback note to the chat answer (filled from {{key}} values).',
    avatar: 'core/workflow/template/customFeedback',
    author: 'platform',
    unlisted: true,
    templateType: 'tools',
    isTool: false,
    inputs: [field('customFeedback', 'string', 'The feedback text', { required: true }), field('customInputs', 'object', 'Values by key')],
    outputs: [field('text', 'string', 'The feedback text')],
    async run(inputs) {
      const values = inputs.customInputs && typeof inputs.customInputs === 'object' ? (inputs.customInputs as Record<string, unknown>) : {};
      return { text: typeof inputs.customFeedback === 'string' ? fillTemplate(inputs.customFeedback, values, false) : '' };
    },
  },
];

export function findSystemPlugin(idOrName: string): SystemPlugin | undefined {
  return SYSTEM_PLUGINS.find((p) => p.id === idOrName || p.id === `community-${idOrName}`);
}

export async function runSystemPlugin(name: string, inputs: Record<string, unknown>, context: SystemPluginContext): Promise<Record<string, unknown>> {
  const plugin = findSystemPlugin(name);
  if (!plugin) throw Errors.pluginUnExist(`System plugin ${name} not found`);
  const named = { ...inputs };
  for (const input of plugin.inputs) {
    const alias = input.aliases?.find((key) => named[key] !== undefined);
    if (named[input.key] === undefined && alias) named[input.key] = named[alias];
  }
  return plugin.run(named, context);
}
