/** The pure parts of the textEditor, TFSwitch and customFeedback plugins (reference §9). */
import { compileUserRegex, parseSlashedRegex, UserRegexBudget, UserRegexTooCostlyError } from '../../../domain/user-regex.js';
import { substitute } from '../../../domain/workflow/interpolate.js';

function stringify(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return undefined;
}

/** `{{key}}` with a key free of braces: each match attempt stops at the next brace (linear time). */
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;

/**
 * Replaces every `{{key}}` of the text with the stringified value, in one pass over the text
 * (one replace per key made a public request cost keys × text length). Inserted values are
 * not searched again for placeholders. What the values add is bounded as a workflow node's
 * substitution is (MAX_INTERPOLATED_GROWTH; TextTooLongError before the text is built): a 1 MB
 * body of placeholders naming one 4 KB value built a 400 MB answer, seconds of blocked event
 * loop and a gigabyte of memory for one anonymous request.
 */
export function fillTemplate(text: string, values: Record<string, unknown>, stringifyObjects = true): string {
  const filled = new Map<string, string>();
  for (const [key, raw] of Object.entries(values)) {
    const value = stringifyObjects ? stringify(raw) : typeof raw === 'string' || typeof raw === 'number' ? String(raw) : undefined;
    if (value !== undefined) filled.set(key, value);
  }
  if (filled.size === 0) return text;
  return substitute(text, PLACEHOLDER, (match) => filled.get(match[1] as string));
}

const FALSY_TEXT = new Set(['', 'undefined', 'null', 'false', '0', 'none']);

/**
 * TFSwitch: false for empty-ish text or a text matching a rule line (`/re/flags` or exact).
 * The rule's patterns share one regex budget: one that would overdraw it (a large program
 * against a long input, or too many patterns) is a UserRegexTooCostlyError naming its line, as
 * soon as it is reached (an earlier matching line still answers).
 */
export function tfSwitch(input: unknown, rule = ''): boolean {
  if (typeof input !== 'string') return Boolean(input);
  if (FALSY_TEXT.has(input)) return false;
  const budget = new UserRegexBudget();
  for (const [index, line] of rule.split('\n').entries()) {
    if (!line) continue;
    // RE2 runs user patterns in linear time; an invalid one is compared as plain text below.
    const slashed = parseSlashedRegex(line);
    try {
      if (slashed && compileUserRegex(slashed.pattern, slashed.flags, budget)?.test(input)) return false;
    } catch (error) {
      if (error instanceof UserRegexTooCostlyError) throw new UserRegexTooCostlyError(`line ${index + 1}: ${error.message}`);
      throw error;
    }
    if (line === input) return false;
  }
  return true;
}
