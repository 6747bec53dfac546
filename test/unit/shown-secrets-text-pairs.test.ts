import { describe, expect, it } from 'vitest';
import { SECRET_MASK } from '../../src/platform/chat/workflow-nodes/credential-text.js';
import type { HttpCall } from '../../src/platform/chat/workflow-nodes/node-deps.js';
import { ShownSecrets } from '../../src/platform/chat/workflow-nodes/shown-secrets.js';
import { runHttpGet } from '../helpers/http-node-run.js';

/**
 * Credentials inside the texts a run detail shows, by the key-name rules of JSON keys and headers
 * (isSecretName): in a text the node sent (a raw-text body: `fields`), every pair kind; in a text
 * it shows (a service's answer, a log, an error: `show`), the structures that are never prose.
 */
const M = SECRET_MASK;

describe('a request text (a raw-text body the user typed)', () => {
  it.each([
    ['form-encoded body', 'a=1&token=tok-abc-123456&api_key=key-98765&b=2', `a=1&token=${M}&api_key=${M}&b=2`],
    ['form pair with a short value', 'q=sea&pwd=ab12', `q=sea&pwd=${M}`],
    ['form name percent-encoded', 'a=1&api%5Fkey=key-98765', `a=1&api%5Fkey=${M}`],
    ['form name plus-encoded', 'a=1&api+key=key-98765&b=2', `a=1&api+key=${M}&b=2`],
    ['header-style lines', 'X-Api-Key: hdr-555\nAuthorization: Digest u="a", r="b"\nUser: ada', `X-Api-Key: ${M}\nAuthorization: ${M}\nUser: ada`],
    ['header-style lines, CRLF', 'Token: abc123\r\nAccept: json', `Token: ${M}\r\nAccept: json`],
    ['URL query inside the text', 'call https://api.test/x?a=1&access_token=tok12345678 now', `call https://api.test/x?a=1&access_token=${M} now`],
    ['TOML / .env quoted value', 'api_key = "key-98765"\nregion = "eu"', `api_key = "${M}"\nregion = "eu"`],
    ['.env value with blanks around =', 'SECRET_KEY = s3cr3t-value\nDEBUG = true', `SECRET_KEY = ${M}\nDEBUG = true`],
    ['JS object, bare name', '{token: "abc123", user: "ada"}', `{token: "${M}", user: "ada"}`],
    ['Python dict, single quotes', "{'password': 'hunter2', 'user': 'ada'}", `{'password': '${M}', 'user': 'ada'}`],
    ['XML attribute', '<auth token="abc123" user="ada"/>', `<auth token="${M}" user="ada"/>`],
  ])('%s', (_case, sent, shown) => {
    const secrets = new ShownSecrets();
    const masked = secrets.fields(sent);
    expect(masked).toBe(shown);
    expect(secrets.show(masked)).toBe(shown);
  });

  it.each([
    ['plain form fields', 'q=weather&lang=en&max_tokens=10'],
    ['descriptive names', 'token_type=bearer&sign_type=RSA2'],
    ['prose with a colon', 'Note: bring the key to the desk'],
    ['quoted non-secret pairs', `{user: "ada", 'mode': 'fast', region = "eu"}`],
    ['an empty credential', 'token=&password=""'],
  ])('keeps %s', (_case, sent) => {
    expect(new ShownSecrets().fields(sent)).toBe(sent);
  });

  it('masks what it masked in a text wherever the detail shows it again (an echo)', () => {
    const secrets = new ShownSecrets();
    secrets.fields('client_secret = "cs-0987654321"\napi%5Fkey=pk-1234567890');
    expect(secrets.show({ echo: 'got cs-0987654321 and pk-1234567890' })).toEqual({ echo: `got ${M} and ${M}` });
  });
});

describe('a shown text (a service answer, a log, an error message)', () => {
  it.each([
    ['a URL query in an echo', { url: 'https://api.test/x?a=1&access_token=abcd1234efgh' }, { url: `https://api.test/x?a=1&access_token=${M}` }],
    ['a URL query with a short credential', 'redirect to https://cb.test/done?code=42&sig=ab12#top', `redirect to https://cb.test/done?code=42&sig=${M}#top`],
    ['a failure message naming the URL', { error: 'Invalid URL: htps://api.test/x?api_key=key-98765' }, { error: `Invalid URL: htps://api.test/x?api_key=${M}` }],
    ['a form-encoded answer (OAuth)', 'access_token=abc123xyz&scope=read&token_type=bearer', `access_token=${M}&scope=read&token_type=bearer`],
    ['an Authorization line of any scheme', 'request headers:\nAuthorization: Digest username="ada", response="6629fae4"\nHost: api.test', `request headers:\nAuthorization: ${M}\nHost: api.test`],
    ['a bare token Authorization line', 'Authorization: abc123def', `Authorization: ${M}`],
    ['a Cookie line', 'Cookie: sid=abc; theme=dark', `Cookie: ${M}`],
    ['a custom credential header line', '  X-Api-Key: k-1234\n  X-Trace: t1', `  X-Api-Key: ${M}\n  X-Trace: t1`],
  ])('masks %s', (_case, answer, shown) => {
    expect(new ShownSecrets().show(answer)).toEqual(shown);
  });

  it('masks those values where the answer shows them again', () => {
    const shown = new ShownSecrets().show({ url: 'https://api.test/x?access_token=abcd1234efgh', echo: 'token abcd1234efgh accepted' });
    expect(shown).toEqual({ url: `https://api.test/x?access_token=${M}`, echo: `token ${M} accepted` });
  });

  it.each([
    ['prose naming a credential', 'Token: see below. password=reset requested'],
    ['a URL whose query names none', 'https://api.test/search?q=sea&max_tokens=10&token_type=bearer'],
    ['a form text of plain fields', 'max_tokens=100&keyword=sea'],
    ['a header line that is no credential header', 'Password: must have 8 characters\nAuth-Mode: strict'],
  ])('keeps %s', (_case, answer) => {
    expect(new ShownSecrets().show(answer)).toBe(answer);
  });
});

describe('long hostile texts through the new pairs', () => {
  // 100 KB or more each: a regex that backtracked on them would hold the test past its time limit.
  it.each([
    ['unclosed quoted values', `token: '${"a\"".repeat(50_000)}`],
    ['runs of quotes', `k=${"'\"".repeat(50_000)}`],
    ['many URL starts, one query at the end', `${'https://a'.repeat(20_000)}?token=x`],
    ['many URL starts and queries', 'https://a?b'.repeat(20_000)],
    ['a form text of one long name', `${'a'.repeat(100_000)}=1`],
    ['blanks before a name and after one', `${' '.repeat(100_000)}key${' '.repeat(100_000)}x\n=`],
  ])('%s come back as they were or masked', (_case, text) => {
    const request = new ShownSecrets().fields(text);
    const shown = new ShownSecrets().show(text);
    for (const out of [request, shown]) expect(out === text || out.includes(M)).toBe(true);
  });
});

describe("an HTTP node whose URL carries a credential in its query", () => {
  const KEY = 'url-key-1234567';
  const runWith = (httpCall: (call: HttpCall) => Promise<{ status: number; text: string }>) => runHttpGet(`https://vendor.test/v1/items?api_key=${KEY}&q=sea`, httpCall);

  it('shows it masked where the service echoes the URL; the output later nodes read keeps it', async () => {
    const { outputs, responseData } = await runWith(async (call) => ({ status: 200, text: JSON.stringify({ url: call.url, query: 'q=sea' }) }));
    expect(responseData.httpResult).toEqual({ url: `https://vendor.test/v1/items?api_key=${M}&q=sea`, query: 'q=sea' });
    expect(outputs.httpRawResponse).toEqual({ url: `https://vendor.test/v1/items?api_key=${KEY}&q=sea`, query: 'q=sea' });
  });

  it('shows it masked where the service echoes the key alone, under a name that says nothing', async () => {
    const { outputs, responseData } = await runWith(async () => ({ status: 200, text: JSON.stringify({ received: KEY }) }));
    expect(responseData.httpResult).toEqual({ received: M });
    expect(outputs.httpRawResponse).toEqual({ received: KEY });
  });

  it('shows it masked where a failed call names the URL', async () => {
    const { responseData } = await runWith(async (call) => {
      throw new Error(`request to ${call.url} failed, reason: connect ECONNREFUSED`);
    });
    expect(JSON.stringify(responseData)).not.toContain(KEY);
    expect((responseData.httpResult as { error: { message: string } }).error.message).toBe(`request to https://vendor.test/v1/items?api_key=${M}&q=sea failed, reason: connect ECONNREFUSED`);
  });
});
