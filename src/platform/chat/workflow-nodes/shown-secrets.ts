/**
 * What a node's response data (its run detail) may show of the credentials the node sent. The
 * run detail reaches every caller who may chat with the app (a read-only member included, who may
 * not see the workflow), the stored chat item and the app's logs, so it holds no credential: the
 * values are masked where the node builds its detail, never only on the way out.
 *
 * - Header values are all masked (the names stay), but for the content-negotiation ones: any
 *   custom header may carry a key, and a header's value is rarely what a flow is debugged by.
 * - Query, body and input fields whose name says credential (`key`, `apiKey`, `access_token`,
 *   `password`, `secret`, `sign` …, see isSecretName) have their value masked; other fields are
 *   shown as sent, since those are what a user debugging their flow needs. So have the values
 *   under such names inside a text of the request (a raw-text, XML or JSON-text body a user
 *   typed: its JSON pairs, form pairs (names percent- or plus-encoded too), XML elements and
 *   attributes, quoted pairs such as `api_key = "…"` or `{token: '…'}`, `Name: value` and
 *   `NAME = value` lines: credential-text.ts, then requestPairs below).
 * - Each masked value (of SCRUB_MIN or more characters; for `Bearer <key>` the key too) is then
 *   replaced wherever else the detail shows it: a body field of another name, a raw-text body,
 *   the answer of a service that echoes the request. A shorter one that a credential name
 *   masked is replaced where it stands whole (a whole string or quoted text, a value after `=`
 *   or `:`), never inside words.
 * - A service's answer (an HTTP or Laf node's result, a code run's return and log, a failure's
 *   data) is shown with the values of its credential-named fields masked the same way, whatever
 *   they look like (`{"access_token": "abc123xyz"}`), and its JSON texts' credential-named pairs
 *   too, as are the structures of a text that are never prose (shownPairs below): the query of
 *   a URL (`https://host/cb?code=…&access_token=…`), a text that is form-encoded as a whole (an
 *   OAuth answer `access_token=…&scope=…`), and the lines of HTTP credential headers
 *   (`Authorization: …`, `Cookie: …`, `X-Api-Key: …`); those values are then masked wherever else
 *   the detail shows them. Only what is shown: the node's outputs, which later nodes read, keep the
 *   answer as received.
 * - Credential-shaped text is masked wherever it shows, whatever names it: `Bearer`/`Basic`
 *   credentials, `sk-…` keys, JWTs, a URL's user:password (credential-text.ts).
 */
import { maskCredentialShapes, maskNamedCredentials, maskNamedJsonPairs, maskWholeValue, SECRET_MASK } from './credential-text.js';

/** Header values shown as sent: content negotiation, never a credential. */
const PLAIN_HEADERS = new Set(['content-type', 'accept', 'accept-language', 'content-language']);

/** Name words that make a field a credential. */
const SECRET_WORDS = new Set([
  'password',
  'passwd',
  'pwd',
  'passphrase',
  'secret',
  'token',
  'credential',
  'credentials',
  'cookie',
  'signature',
  'sign',
  'sig',
  'auth',
  'authorization',
  'apikey',
  'accesskey',
  'secretkey',
  'privatekey',
  'appkey',
  'sessionid',
  'ak',
  'sk',
]);
/**
 * Words after a credential word that make the field describe the credential instead of holding
 * it (an OAuth answer's `token_type: "Bearer"`, `expires_in`; a signed API's `sign_type: "RSA2"`).
 */
// Not `url`, `uri` or `endpoint`: a `token_url` may carry the credential in its query (a presigned or webhook URL).
const DESCRIPTOR_WORDS = new Set(['type', 'method', 'scheme', 'count', 'length', 'limit', 'usage', 'expires', 'expiry', 'expiration', 'ttl', 'format', 'version', 'mode', 'enabled', 'required', 'policy']);
/** Words before `key` that make it a credential (`api_key`, `X-Access-Key`); a bare `key` is one too. */
const KEY_QUALIFIERS = new Set(['api', 'access', 'secret', 'private', 'app', 'client', 'subscription', 'license', 'auth', 'master', 'signing', 'encryption', 'service', 'account', 'session', 'user']);

/**
 * A masked value this short is not searched for inside other text: a short header value (`true`,
 * `json`) would blank every such word of the answer, and credentials are longer.
 */
const SCRUB_MIN = 8;
/** A credential-named value this short is not masked elsewhere even where it stands whole (`1`, `on`). */
const WHOLE_MIN = 4;

/** Nesting walked object by object; deeper parts are scrubbed as JSON text. */
const WALK_DEPTH = 64;

/** A form or query pair whose name may be percent- or plus-encoded (`api%5Fkey=…`, `api+key=…`). */
const ENCODED_FORM_PAIR = /(^|[?&;\s])([A-Za-z0-9_.[\]%+-]{1,100})=([^&;\s"'<>\\]+)/g;
/**
 * A pair whose value is quoted, the name bare or quoted alike: `api_key = "…"` (TOML, .env),
 * `{token: '…'}` and `{'token': '…'}` (JS, Python), an XML attribute `token="…"`.
 */
const QUOTED_PAIR = /(?<![\w-])(['"]?)([A-Za-z_][\w.-]{0,100})\1([ \t]*[:=][ \t]*)(["'])((?:(?!\4)[^\r\n\\])*)\4/g;
/** An assignment line with blanks around its `=` (.env, INI): `API_KEY = value`. */
const ASSIGN_LINE = /^([ \t]*)([A-Za-z_][\w.-]{0,100})([ \t]+=[ \t]*|=[ \t]+)(\S[^\r\n]*)$/gm;
/** A URL, to where it ends (its query is read from it): nothing follows the run, so nothing backtracks. */
const URL_TEXT = /\b[a-z][a-z0-9+.-]{0,20}:\/\/[^\s"'<>\\]+/gi;
/** A text that is form-encoded as a whole: `name=value&name=value`. */
const FORM_TEXT = /^[\w.%+[\]-]{1,100}=[^\s&]*(?:&[\w.%+[\]-]{1,100}=[^\s&]*)*$/;
/** One pair of a query or form text. */
const QUERY_PAIR = /(^|[&;])([^&;=#]{1,100})=([^&;#]*)/g;
/** A header line (`Name: value`) of a text. */
const HEADER_LINE = /^([ \t]*)([A-Za-z][\w-]{0,100})([ \t]*:[ \t]*)(\S[^\r\n]*)$/gm;
/** Credential headers without a `-` in their name; with one (`X-Api-Key`, `Proxy-Authorization`) the name is a header's. */
const BARE_CREDENTIAL_HEADERS = new Set(['authorization', 'cookie']);

function formDecoded(encoded: string): string {
  try {
    return decodeURIComponent(encoded.replace(/\+/g, ' '));
  } catch {
    return encoded;
  }
}

/** `apiKey`, `x-api-key`, `API_KEY` → ['api', 'key']. */
function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** Whether a field of this name holds a credential (see the file comment). */
export function isSecretName(name: string): boolean {
  const words = nameWords(name);
  if (words.length === 0) return false;
  if (SECRET_WORDS.has(words.join(''))) return true;
  const lastSecret = words.findLastIndex((word) => SECRET_WORDS.has(word));
  // `token_type`, `sign_type`, `token_expires_in`: what describes a credential, not one.
  if (lastSecret !== -1) return !words.slice(lastSecret + 1).some((word) => DESCRIPTOR_WORDS.has(word));
  const last = words.length - 1;
  return words[last] === 'key' && (last === 0 || KEY_QUALIFIERS.has(words[last - 1]!));
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null);

/** How the walk treats the texts it meets: the request's own (credential names in them masked) or anything shown. */
type TextMode = 'request' | 'shown';

/**
 * One node run's masking: `headers`, `fields` and `show` note the credentials they mask, and
 * everything shown goes through `show`, so a credential met in one place is hidden in those shown
 * after it (a run shows the request first, then the answer).
 */
export class ShownSecrets {
  /** Credentials met, SCRUB_MIN characters or more: replaced wherever they show. */
  private readonly secrets = new Set<string>();
  /** Shorter values under a credential name: masked where they stand whole. */
  private readonly shortNamed = new Set<string>();
  /** isSecretName by name: an answer's objects repeat their names (a list of 50,000 rows, 5 names). */
  private readonly judgedNames = new Map<string, boolean>();
  private readonly isSecret = (name: string): boolean => {
    const known = this.judgedNames.get(name);
    if (known !== undefined) return known;
    const judged = isSecretName(name);
    this.judgedNames.set(name, judged);
    return judged;
  };
  /** A field whose value is masked: a credential name, and a value (an empty one hides nothing). */
  private readonly isMaskedField = (key: string, child: unknown) => child !== undefined && child !== null && child !== '' && this.isSecret(key);
  private readonly maskField = (key: string, child: unknown) => (this.isMaskedField(key, child) ? { masked: SECRET_MASK } : undefined);

  /** The headers to show: names kept, values masked but the content-negotiation ones. */
  headers(headers: Record<string, string>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (PLAIN_HEADERS.has(name.toLowerCase())) out[name] = value;
      else {
        const named = isSecretName(name);
        this.note(value, named);
        // `Bearer <key>`, `Basic <token>`: the key may be sent bare elsewhere.
        const scheme = /^[A-Za-z][\w-]*\s+(\S.*)$/.exec(value.trim());
        if (scheme) this.note(scheme[1]!, named);
        out[name] = value === '' ? '' : SECRET_MASK;
      }
    }
    return out;
  }

  /**
   * `value` (the request's query, body or inputs, or a raw-text body) with the values of
   * credential-named fields masked, at any depth and inside its texts (not yet scrubbed: see show).
   */
  fields<T>(value: T): T {
    return this.walk(value, 0, 'request', (key, child) => {
      if (!this.isMaskedField(key, child)) return undefined;
      this.noteAll(child, 0);
      return { masked: SECRET_MASK };
    }) as T;
  }

  /**
   * `value` as the detail shows it (`value` itself when nothing is masked): its credential-named
   * fields masked (a service's answer as the request's), then every credential noted so far, its
   * own included, and every credential-shaped text, masked at any depth.
   */
  show<T>(value: T): T {
    // Its own credentials first, so that an echo before the field that names one is masked too.
    this.noteNamed(value, 0);
    return this.walk(value, 0, 'shown', this.maskField) as T;
  }

  private note(value: string, named: boolean): void {
    // A credential of blanks only would be searched for in every run of spaces; the mask is none.
    if (value.trim() === '' || value === SECRET_MASK) return;
    if (value.length >= SCRUB_MIN) this.secrets.add(value);
    else if (named && value.length >= WHOLE_MIN) this.shortNamed.add(value);
  }

  /** The value of a credential-named field (each string and number in it, to WALK_DEPTH). */
  private noteAll(value: unknown, depth: number): void {
    if (typeof value === 'string') this.note(value, true);
    else if (typeof value === 'number' || typeof value === 'bigint') this.note(String(value), true);
    else if (depth >= WALK_DEPTH) return;
    else if (Array.isArray(value)) for (const item of value) this.noteAll(item, depth + 1);
    else if (isPlainObject(value)) for (const item of Object.values(value)) this.noteAll(item, depth + 1);
  }

  /** The values of `value`'s credential-named fields, to WALK_DEPTH (deeper ones are noted as deepText masks them). */
  private noteNamed(value: unknown, depth: number): void {
    if (typeof value !== 'object' || value === null || depth >= WALK_DEPTH) return;
    if (Array.isArray(value)) for (const item of value) this.noteNamed(item, depth + 1);
    else if (isPlainObject(value)) {
      for (const [key, child] of Object.entries(value)) {
        if (this.isMaskedField(key, child)) this.noteAll(child, depth + 1);
        else this.noteNamed(child, depth + 1);
      }
    }
  }

  private text(text: string, mode: TextMode): string {
    if (mode === 'request') return this.requestPairs(maskNamedCredentials(text, this.isSecret, (value) => this.note(value, true)));
    let out = this.shownPairs(maskNamedJsonPairs(text, this.isSecret, (value) => this.note(value, true)));
    for (const secret of this.secrets) if (out.includes(secret)) out = out.split(secret).join(SECRET_MASK);
    for (const secret of this.shortNamed) out = maskWholeValue(out, secret);
    return maskCredentialShapes(out);
  }

  /** A request text's pairs credential-text.ts does not read (encoded form names, quoted values). */
  private requestPairs(text: string): string {
    let out = text;
    if (out.includes('=') && /[%+]/.test(out)) out = out.replace(ENCODED_FORM_PAIR, (match, lead: string, name: string, value: string) => (this.maskedPair(name, value) ? `${lead}${name}=${SECRET_MASK}` : match));
    if (/["']/.test(out)) {
      out = out.replace(QUOTED_PAIR, (match, nameQuote: string, name: string, separator: string, quote: string, value: string) => {
        if (value === '' || value === SECRET_MASK || !this.isSecret(name)) return match;
        this.note(value, true);
        return `${nameQuote}${name}${nameQuote}${separator}${quote}${SECRET_MASK}${quote}`;
      });
    }
    if (out.includes('=')) {
      out = out.replace(ASSIGN_LINE, (match, indent: string, name: string, equals: string, value: string) => {
        // A quoted value is masked above, quotes kept.
        if (value.includes(SECRET_MASK) || !this.isSecret(name)) return match;
        this.note(value.trim(), true);
        return `${indent}${name}${equals}${SECRET_MASK}`;
      });
    }
    return out;
  }

  /** The structures of a shown text that are never prose (URL queries, a form text, credential header lines). */
  private shownPairs(text: string): string {
    const pairs = (query: string) => query.replace(QUERY_PAIR, (match, lead: string, name: string, value: string) => (this.maskedPair(name, value) ? `${lead}${name}=${SECRET_MASK}` : match));
    let out = text;
    if (out.includes('://') && out.includes('?')) {
      out = out.replace(URL_TEXT, (url) => {
        const start = url.indexOf('?');
        if (start === -1) return url;
        const end = url.indexOf('#', start);
        return end === -1 ? url.slice(0, start + 1) + pairs(url.slice(start + 1)) : url.slice(0, start + 1) + pairs(url.slice(start + 1, end)) + url.slice(end);
      });
    }
    if (out.includes('=') && FORM_TEXT.test(out.trim())) out = pairs(out);
    if (out.includes(':')) {
      out = out.replace(HEADER_LINE, (match, indent: string, name: string, colon: string, value: string) => {
        const headerName = name.includes('-') || BARE_CREDENTIAL_HEADERS.has(name.toLowerCase());
        if (!headerName || !this.isSecret(name) || value.trim() === SECRET_MASK) return match;
        this.note(value.trim(), true);
        return `${indent}${name}${colon}${SECRET_MASK}`;
      });
    }
    return out;
  }

  /** Whether a form pair's value is masked (its name, decoded, says credential); notes the value as written and decoded. */
  private maskedPair(name: string, value: string): boolean {
    if (value === '' || value === SECRET_MASK || !this.isSecret(formDecoded(name))) return false;
    this.note(value, true);
    this.note(formDecoded(value), true);
    return true;
  }

  /**
   * JSON-like `value` with its texts masked (`mode`) and `onField` masking object fields; a part
   * with nothing masked is returned as it is (an answer with no credential is not copied).
   */
  private walk(value: unknown, depth: number, mode: TextMode, onField: (key: string, child: unknown) => { masked: string } | undefined): unknown {
    if (typeof value === 'string') return this.text(value, mode);
    if (typeof value !== 'object' || value === null) return value;
    if (!Array.isArray(value) && !isPlainObject(value)) return value;
    if (depth >= WALK_DEPTH) return this.deepText(value, mode);
    let changed = false;
    if (Array.isArray(value)) {
      const out = value.map((item) => {
        const shown = this.walk(item, depth + 1, mode, onField);
        changed ||= shown !== item;
        return shown;
      });
      return changed ? out : value;
    }
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      const masked = onField(key, child);
      out[key] = masked ? masked.masked : this.walk(child, depth + 1, mode, onField);
      changed ||= out[key] !== child;
    }
    return changed ? out : value;
  }

  /**
   * A part nested past WALK_DEPTH: its JSON text masked (each credential as it is written inside
   * a JSON string; credential names as JSON pairs), keeping the structure.
   */
  private deepText(value: unknown, mode: TextMode): unknown {
    let text = JSON.stringify(value);
    if (mode === 'request') text = this.requestPairs(maskNamedCredentials(text, this.isSecret, (found) => this.note(found, true)));
    else {
      const written = (secret: string) => JSON.stringify(secret).slice(1, -1);
      text = this.shownPairs(maskNamedJsonPairs(text, this.isSecret, (found) => this.note(found, true)));
      for (const secret of this.secrets) if (text.includes(written(secret))) text = text.split(written(secret)).join(SECRET_MASK);
      for (const secret of this.shortNamed) text = maskWholeValue(text, written(secret));
      text = maskCredentialShapes(text);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // A credential that also matched the JSON around a string (digits and commas): nothing of it shown.
      return SECRET_MASK;
    }
  }
}
