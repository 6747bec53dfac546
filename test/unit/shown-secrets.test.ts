import { describe, expect, it } from 'vitest';
import { maskCredentialShapes, maskWholeValue, SECRET_MASK } from '../../src/platform/chat/workflow-nodes/credential-text.js';
import { isSecretName, ShownSecrets } from '../../src/platform/chat/workflow-nodes/shown-secrets.js';

describe('isSecretName', () => {
  it('takes the usual credential field names, in any case and separator style', () => {
    for (const name of ['key', 'apiKey', 'api_key', 'X-API-KEY', 'access_token', 'Authorization', 'X-Auth-Token', 'client_secret', 'password', 'userPwd', 'sign', 'signature', 'Ocp-Apim-Subscription-Key', 'sessionId', 'ak', 'sk']) {
      expect(isSecretName(name), name).toBe(true);
    }
  });

  it('leaves names describing a credential rather than holding it (an OAuth answer shows its token_type)', () => {
    for (const name of ['token_type', 'tokenType', 'sign_type', 'signMethod', 'token_expires_in', 'password_policy', 'tokenCount']) {
      expect(isSecretName(name), name).toBe(false);
    }
    // The credential itself still, whatever comes before it.
    // A URL may carry the credential in its query: still masked.
    for (const name of ['type_token', 'refresh_token', 'token_type_secret', 'x-auth-token', 'token_url', 'auth_endpoint']) expect(isSecretName(name), name).toBe(true);
    const secrets = new ShownSecrets();
    expect(secrets.show({ access_token: 'abc123xyz789', token_type: 'Bearer', expires_in: 3600 })).toEqual({ access_token: SECRET_MASK, token_type: 'Bearer', expires_in: 3600 });
  });

  it('leaves names that only look alike', () => {
    for (const name of ['max_tokens', 'monkey', 'sortKey', 'design', 'author', 'question', 'note', 'keyword', '']) {
      expect(isSecretName(name), name).toBe(false);
    }
  });
});

describe('ShownSecrets', () => {
  it('masks header values but content negotiation, and the bearer key wherever else it shows', () => {
    const secrets = new ShownSecrets();
    expect(secrets.headers({ Authorization: 'Bearer sk-abcdef123456', 'Content-Type': 'application/json', 'X-Empty': '' })).toEqual({
      Authorization: SECRET_MASK,
      'Content-Type': 'application/json',
      'X-Empty': '',
    });
    expect(secrets.show({ echoed: 'got sk-abcdef123456 ok', whole: 'Bearer sk-abcdef123456' })).toEqual({ echoed: `got ${SECRET_MASK} ok`, whole: SECRET_MASK });
  });

  it('masks credential-named fields at any depth and finds their values elsewhere; other fields stay', () => {
    const secrets = new ShownSecrets();
    // The field of another name comes first: it is scrubbed once every credential is known (show).
    const body = secrets.fields({ note: 'list-secret-1 here', auth: { user: 'ada', pass: 'hunter22' }, list: [{ api_key: 'list-secret-1' }], n: 3 });
    expect(body).toEqual({ auth: SECRET_MASK, list: [{ api_key: SECRET_MASK }], note: 'list-secret-1 here', n: 3 });
    expect(secrets.show(body)).toEqual({ auth: SECRET_MASK, list: [{ api_key: SECRET_MASK }], note: `${SECRET_MASK} here`, n: 3 });
    expect(secrets.show('hunter22 and ada')).toBe(`${SECRET_MASK} and ada`);
  });

  it('does not search for short values (a header of `true` blanks no answer)', () => {
    const secrets = new ShownSecrets();
    secrets.headers({ 'X-Debug': 'true' });
    expect(secrets.show({ ok: 'true' })).toEqual({ ok: 'true' });
  });

  it('scrubs a value nested deeper than it walks, keeping the structure', () => {
    const secrets = new ShownSecrets();
    secrets.headers({ 'X-Key': 'deep-secret-"quoted"' });
    let deep: unknown = { leaf: 'has deep-secret-"quoted" inside', n: 1 };
    let expected: unknown = { leaf: `has ${SECRET_MASK} inside`, n: 1 };
    for (let i = 0; i < 200; i++) {
      deep = { level: deep };
      expected = { level: expected };
    }
    expect(secrets.show(deep)).toEqual(expected);
  });

  it('answers the value itself when nothing was masked', () => {
    const value = { a: 1 };
    expect(new ShownSecrets().show(value)).toBe(value);
  });
});

describe('credential-shaped text', () => {
  const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
  const BASIC = Buffer.from('ada:hunter2').toString('base64');

  it('masks Bearer/Basic credentials, sk- keys, JWTs and URL passwords anywhere shown, names nothing', () => {
    const shown = new ShownSecrets().show({
      note: 'call with Authorization: Bearer abc123def456 please',
      basic: `Basic ${BASIC}`,
      openai: 'use sk-proj-AbCdEf0123456789xyz now',
      jwt: `token=${JWT}`,
      link: 'https://ada:hunter2@db.example.com/x and postgres://svc:pw@10.0.0.1:5432/db',
      list: ['ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'AKIAABCDEFGHIJKLMNOP'],
    });
    expect(shown).toEqual({
      note: `call with Authorization: Bearer ${SECRET_MASK} please`,
      basic: `Basic ${SECRET_MASK}`,
      openai: `use ${SECRET_MASK} now`,
      jwt: `token=${SECRET_MASK}`,
      link: `https://${SECRET_MASK}@db.example.com/x and postgres://${SECRET_MASK}@10.0.0.1:5432/db`,
      list: [SECRET_MASK, SECRET_MASK],
    });
  });

  it('leaves prose and ordinary values that only look alike', () => {
    const value = {
      prose: 'Basic authentication sends a Bearer token; see the task-based guide and sk-learn.',
      git: 'clone ssh://git@github.com/org/repo.git or mail ada@example.com',
      word: 'eyJ is how base64 JSON starts',
      numbers: 'Bearer 42',
      limits: 'max_tokens=100&keyword=sea',
    };
    expect(new ShownSecrets().show(value)).toBe(value);
  });

  it('masks credential-named values inside a raw-text body (JSON, form, XML, header lines), however short, and where they show again', () => {
    const secrets = new ShownSecrets();
    const raw = '{"password": "pw12", "api_key": "k-0987654321", "user": "ada", "pwd": 4711}\napi_token=tok9&q=sea\n<auth><secret>xml-sec</secret></auth>\nX-Api-Key: zz99';
    const body = secrets.fields(raw);
    expect(body).toBe(
      `{"password": "${SECRET_MASK}", "api_key": "${SECRET_MASK}", "user": "ada", "pwd": "${SECRET_MASK}"}\napi_token=${SECRET_MASK}&q=sea\n<auth><secret>${SECRET_MASK}</secret></auth>\nX-Api-Key: ${SECRET_MASK}`,
    );
    // Elsewhere: the long one anywhere, the short ones where they stand whole (not inside words).
    expect(secrets.show({ echo: 'got k-0987654321 and pw12', copy: 'pw12', quoted: '{"again": "tok9", "word": "tok99"}', pin: '4711' })).toEqual({
      echo: `got ${SECRET_MASK} and pw12`,
      copy: SECRET_MASK,
      quoted: `{"again": "${SECRET_MASK}", "word": "tok99"}`,
      pin: SECRET_MASK,
    });
  });

  it('masks a short credential-named header or field value where it shows whole, not any short header value', () => {
    const secrets = new ShownSecrets();
    secrets.headers({ 'X-Api-Key': 'k123', 'X-Debug': 'true' });
    secrets.fields({ password: 'pass' });
    expect(secrets.show({ a: 'k123', b: 'true', c: 'form=pass&x=1', d: 'compass k123x' })).toEqual({ a: SECRET_MASK, b: 'true', c: `form=${SECRET_MASK}&x=1`, d: 'compass k123x' });
  });
});

describe('masking long hostile texts (a service answer, a code log)', () => {
  // Each took minutes before (a quadratic regex: the test's own time bound is what fails then).
  it('a run of JWT-like tokens joined by dashes, with no JWT in it, comes back as it was', () => {
    const text = 'eyJ-'.repeat(100_000);
    expect(maskCredentialShapes(text)).toBe(text);
    expect(maskCredentialShapes(`${text} eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln`)).toBe(`${text} ${SECRET_MASK}`);
  });

  it('a short credential after a long run of blanks is looked for only where it stands', () => {
    const text = `${' '.repeat(200_000)}Zq7!x`;
    expect(maskWholeValue(text, 'Zq7!x')).toBe(text);
    expect(maskWholeValue(`token=${' '.repeat(200_000)}Zq7!x`, 'Zq7!x')).toBe(`token=${' '.repeat(200_000)}${SECRET_MASK}`);
  });

  it('a credential of blanks only is not searched for', () => {
    const secrets = new ShownSecrets();
    secrets.headers({ 'X-Api-Key': '     ' });
    const answer = `note=${' '.repeat(100_000)}end`;
    expect(secrets.show(answer)).toBe(answer);
  });
});
