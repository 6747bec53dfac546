import { isUtf8 } from 'node:buffer';
import { GUARDED_KEY_NAMES } from '../../infra/input-guard.js';

/**
 * Form bodies of /oauth/token read as Go's url.ParseQuery reads them (the reference's handler):
 * `+` is a space, a bad percent-escape or a `;` separator is an error, a pair with an error is
 * skipped, and the first error is kept. The reference then fails reading its first parameter and
 * answers 401 invalid_client with the error's text: the parsed form carries that text here.
 */
export const FORM_PROBLEM = Symbol('form problem');

export type ParsedForm = Record<string, string | string[]> & { [FORM_PROBLEM]?: string };

const isHex = (code: number | undefined) =>
  code !== undefined && ((code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102));

/** Go's strconv.Quote of a few bytes: JSON's quoting, but a byte of no whole UTF-8 character is `\xNN`. */
function goQuote(bytes: Buffer): string {
  if (isUtf8(bytes)) return JSON.stringify(bytes.toString('utf8'));
  return `"${Array.from(bytes, (byte) => (byte < 0x80 ? JSON.stringify(String.fromCharCode(byte)).slice(1, -1) : `\\x${byte.toString(16).padStart(2, '0')}`)).join('')}"`;
}

/**
 * Go's QueryUnescape: the text, or the error it reports (`invalid URL escape "%zz"`). Go works on
 * the body's bytes, so this does too: the text as UTF-8, escapes decoded to bytes, and the bytes
 * read back as UTF-8 (raw and escaped characters alike, those above U+FFFF included).
 */
function queryUnescape(text: string): { value: string } | { problem: string } {
  if (!text.includes('%') && !text.includes('+')) return { value: text };
  const input = Buffer.from(text, 'utf8');
  const output = Buffer.alloc(input.length);
  let length = 0;
  for (let i = 0; i < input.length; i++) {
    const byte = input[i]!;
    if (byte === 0x25) {
      if (i + 2 >= input.length || !isHex(input[i + 1]) || !isHex(input[i + 2])) {
        return { problem: `invalid URL escape ${goQuote(input.subarray(i, i + 3))}` };
      }
      output[length++] = Number.parseInt(input.toString('latin1', i + 1, i + 3), 16);
      i += 2;
    } else output[length++] = byte === 0x2b ? 0x20 : byte;
  }
  return { value: output.toString('utf8', 0, length) };
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
