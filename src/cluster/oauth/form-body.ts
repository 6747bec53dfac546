import { GUARDED_KEY_NAMES } from '../../infra/input-guard.js';

/**
 * Form bodies of /oauth/token read as Go's url.ParseQuery reads them (the reference's handler):
 * `+` is a space, a bad percent-escape or a `;` separator is an error, a pair with an error is
 * skipped, and the first error is kept. The reference then fails reading its first parameter and
 * answers 401 invalid_client with the error's text: the parsed form carries that text here.
 */
export const FORM_PROBLEM = Symbol('form problem');

export type ParsedForm = Record<string, string | string[]> & { [FORM_PROBLEM]?: string };

const isHex = (code: number) => (code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102);

/** Go's QueryUnescape: the text, or the error it reports (`invalid URL escape "%zz"`). */
function queryUnescape(text: string): { value: string } | { problem: string } {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === '%') {
      if (i + 2 >= text.length || !isHex(text.charCodeAt(i + 1)) || !isHex(text.charCodeAt(i + 2))) {
        return { problem: `invalid URL escape ${JSON.stringify(text.slice(i, i + 3))}` };
      }
      bytes.push(Number.parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (char === '+') bytes.push(32);
    else bytes.push(...Buffer.from(char, 'utf8'));
  }
  return { value: Buffer.from(bytes).toString('utf8') };
}

export function parseGoForm(body: string): ParsedForm {
  const form: ParsedForm = {};
  const fail = (problem: string) => {
    form[FORM_PROBLEM] ??= problem;
  };
  for (const pair of body.split('&')) {
    if (pair.includes(';')) {
      fail('invalid semicolon separator in query');
      continue;
    }
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const key = queryUnescape(equals === -1 ? pair : pair.slice(0, equals));
    if ('problem' in key) {
      fail(key.problem);
      continue;
    }
    const value = queryUnescape(equals === -1 ? '' : pair.slice(equals + 1));
    if ('problem' in value) {
      fail(value.problem);
      continue;
    }
    // Keys no cluster route reads that the input guard would refuse: ignored, as RFC 6749 §3.2 and the reference do.
    if (GUARDED_KEY_NAMES.has(key.value)) continue;
    const existing = form[key.value];
    form[key.value] = existing === undefined ? value.value : [...(Array.isArray(existing) ? existing : [existing]), value.value];
  }
  return form;
}
