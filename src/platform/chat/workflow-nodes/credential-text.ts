/**
 * Credentials inside free text, for what a node's run detail shows (shown-secrets.ts): text a
 * user typed (a raw-text, XML or JSON-text body), a service's answer, a code run's log. Two kinds:
 *
 * - Credential shapes, whatever names them: an `Authorization`-style `Bearer`/`Token` credential
 *   or `Basic` user:password pair, OpenAI-style `sk-…` keys, JWTs, the user:password of a URL, and
 *   the fixed prefixes of a few well-known providers' keys (GitHub, Slack, AWS, Google, FastGPT).
 *   Each pattern asks for what prose does not have (digits or length in a token, a `:` in a
 *   decoded Basic pair, a prefix and a length), so ordinary text is left as written.
 * - Values under a credential name (shown-secrets.ts isSecretName) in the text's own structure:
 *   a JSON `"name": value`, a form or query `name=value`, an XML `<name>value</name>`, a
 *   header-style line `Name: value`; in a text a service answered, the JSON pairs only (a
 *   `Token: see below` line of prose is no credential).
 */
import { escapeRegex } from '../../../infra/mongo.js';

/** What stands in for a credential in what a run detail shows (request and answer alike). */
export const SECRET_MASK = '******';

/** `Bearer`/`Token` credentials: a token of 8+ characters with a digit, or of 16+ (prose words are neither). */
const SCHEME_TOKEN = /\b(Bearer|Token)([ \t]+)([A-Za-z0-9\-._~+/]+=*)/gi;
/** `Basic` credentials: base64 of a printable `user:password`. */
const BASIC_PAIR = /\b(Basic)([ \t]+)([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/gi;
/** The user:password (or a long token standing for a user) of a URL: `scheme://<userinfo>@host`. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]{0,20}:\/\/)([^\s/?#@"'<>\\]+)@/gi;
/** Keys recognisable by their prefix alone (the OpenAI style `sk-…` and `sk-proj-…`, GitHub, Slack, AWS key ids, Google, FastGPT). */
const PREFIXED_KEY = /\b(?:sk-[A-Za-z0-9][A-Za-z0-9_-]{15,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|fastgpt-[A-Za-z0-9]{16,})/g;
/** A JWT: base64url JSON header and payload (`eyJ` is `{"`), then the signature (empty for `alg: none`). */
// Starts only where no token character precedes: with `\b`, each `eyJ` of a run like `eyJ-eyJ-…`
// (`-` is no word character) began a scan to the run's end, quadratic (10 s at 100 KB).
const JWT = /(?<![\w-])eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;

const isToken = (token: string) => (token.length >= 8 && /\d/.test(token)) || token.length >= 16;

function isBasicPair(encoded: string): boolean {
  const decoded = Buffer.from(encoded, 'base64').toString('latin1');
  return decoded.length >= 3 && decoded.includes(':') && /^[\x20-\x7e]+$/.test(decoded);
}

/** `text` with every credential shape in it masked. */
export function maskCredentialShapes(text: string): string {
  // Cheap look-ups first: most texts hold none of the shapes' anchors.
  let out = text;
  if (/bearer|token/i.test(out)) out = out.replace(SCHEME_TOKEN, (match, scheme: string, space: string, token: string) => (isToken(token) ? `${scheme}${space}${SECRET_MASK}` : match));
  if (/basic/i.test(out)) out = out.replace(BASIC_PAIR, (match, scheme: string, space: string, encoded: string) => (isBasicPair(encoded) ? `${scheme}${space}${SECRET_MASK}` : match));
  if (out.includes('://')) out = out.replace(URL_USERINFO, (match, scheme: string, userinfo: string) => (userinfo.includes(':') || userinfo.length >= 16 ? `${scheme}${SECRET_MASK}@` : match));
  if (out.includes('eyJ')) out = out.replace(JWT, SECRET_MASK);
  return out.replace(PREFIXED_KEY, SECRET_MASK);
}

/** A JSON pair in text: a quoted name, then a string or number value. */
const JSON_PAIR = /"((?:[^"\\\n]|\\.){1,100})"(\s*:\s*)("(?:[^"\\\n]|\\.)*"|-?\d[\d.eE+-]*)/g;
/** A form or query pair: `name=value` after the start, `?`, `&`, `;` or a space. */
const FORM_PAIR = /(^|[?&;\s])([A-Za-z0-9_.[\]-]{1,100})=([^&;\s"'<>]+)/g;
/** An XML element holding text only. */
const XML_ELEMENT = /<([A-Za-z_][\w.:-]{0,100})(\s[^<>]*)?>([^<]+)<\/\1\s*>/g;
/** A header-style (or YAML) line: `Name: value`. */
const HEADER_LINE = /^([ \t]*)([A-Za-z][\w-]{0,100})([ \t]*:[ \t]*)(\S[^\r\n]*)$/gm;

function jsonString(quoted: string): string {
  try {
    return String(JSON.parse(quoted));
  } catch {
    return quoted.slice(1, -1);
  }
}

function formValue(encoded: string): string {
  try {
    return decodeURIComponent(encoded.replace(/\+/g, ' '));
  } catch {
    return encoded;
  }
}

/**
 * `text` with the values of its JSON pairs under credential names masked (`isSecret` judges a
 * name); `onValue` is told each value masked, to be masked wherever else it shows. Unlike the
 * other kinds of pair, a quoted JSON pair is structure even inside prose or a log, so a text a
 * service answered is masked so too (maskNamedCredentials: all kinds, for a request's own texts).
 */
export function maskNamedJsonPairs(text: string, isSecret: (name: string) => boolean, onValue: (value: string) => void): string {
  if (!text.includes('"')) return text;
  return text.replace(JSON_PAIR, (match, name: string, colon: string, value: string) => {
    if (!isSecret(jsonString(`"${name}"`)) || value === '""' || value === `"${SECRET_MASK}"`) return match;
    onValue(value.startsWith('"') ? jsonString(value) : value);
    return `"${name}"${colon}"${SECRET_MASK}"`;
  });
}

/**
 * `text` with the values under credential names in it masked (`isSecret` judges a name);
 * `onValue` is told each value masked (as written and as decoded), to be masked wherever else it shows.
 */
export function maskNamedCredentials(text: string, isSecret: (name: string) => boolean, onValue: (value: string) => void): string {
  let out = maskNamedJsonPairs(text, isSecret, onValue);
  if (out.includes('=')) {
    out = out.replace(FORM_PAIR, (match, lead: string, name: string, value: string) => {
      if (!isSecret(formValue(name)) || value === SECRET_MASK) return match;
      onValue(value);
      onValue(formValue(value));
      return `${lead}${name}=${SECRET_MASK}`;
    });
  }
  if (out.includes('</')) {
    out = out.replace(XML_ELEMENT, (match, name: string, attributes: string | undefined, value: string) => {
      if (!isSecret(name) || !value.trim()) return match;
      onValue(value.trim());
      return `<${name}${attributes ?? ''}>${SECRET_MASK}</${name}>`;
    });
  }
  if (out.includes(':')) {
    out = out.replace(HEADER_LINE, (match, indent: string, name: string, colon: string, value: string) => {
      if (!isSecret(name) || value.trim() === SECRET_MASK) return match;
      onValue(value.trim());
      return `${indent}${name}${colon}${SECRET_MASK}`;
    });
  }
  return out;
}

/**
 * `text` with `value` masked where it stands whole: a whole quoted string, or a value after
 * `=`, `>` or `:` that ends there. For short credentials, which are not searched for inside words.
 */
export function maskWholeValue(text: string, value: string): string {
  if (text === value) return SECRET_MASK;
  if (!text.includes(value)) return text;
  const at = escapeRegex(value);
  // The lookahead first: the lookbehinds (one of variable length) run only where the value
  // stands, not backwards from every position of the text (quadratic on long runs of spaces).
  return text.replace(new RegExp(`(?=${at})(?:(?<=")${at}(?=")|(?<=[=>:][ \\t]*)${at}(?=$|[\\s&;,<"}\\]]))`, 'g'), SECRET_MASK);
}
