import { describe, expect, it } from 'vitest';
import { isSecretName, SECRET_MASK, ShownSecrets } from '../../src/platform/chat/workflow-nodes/shown-secrets.js';

describe('isSecretName', () => {
  it('takes the usual credential field names, in any case and separator style', () => {
    for (const name of ['key', 'apiKey', 'api_key', 'X-API-KEY', 'access_token', 'Authorization', 'X-Auth-Token', 'client_secret', 'password', 'userPwd', 'sign', 'signature', 'Ocp-Apim-Subscription-Key', 'sessionId', 'ak', 'sk']) {
      expect(isSecretName(name), name).toBe(true);
    }
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
