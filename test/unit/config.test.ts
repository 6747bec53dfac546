import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('loadConfig', () => {
  it('applies defaults', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(3000);
    expect(config.MONGODB_URI).toBe('mongodb://127.0.0.1:27017/platform');
    expect(config.OAUTH_CLIENTS).toEqual([{ name: 'kubesphere', secret: 'kubesphere' }]);
    expect(config.CLUSTER_ADMIN_PASSWORD).toBe('P@88w0rd');
    expect(config.generatedSecrets).toEqual(expect.arrayContaining(['TOKEN_KEY', 'ROOT_KEY', 'CLUSTER_JWT_SECRET']));
    expect(config.TOKEN_KEY).toMatch(/^[0-9a-f]{64}$/);
  });

  it('takes the longest timer Node keeps, and http(s) endpoints', () => {
    const config = loadConfig({ SHUTDOWN_TIMEOUT_MS: String(2 ** 31 - 1), OPENAI_BASE_URL: 'http://localhost:8080/v1', SANDBOX_URL: 'https://sandbox.example.com' });
    expect(config.SHUTDOWN_TIMEOUT_MS).toBe(2 ** 31 - 1);
    expect(config.OPENAI_BASE_URL).toBe('http://localhost:8080/v1');
  });

  it('coerces numbers and booleans', () => {
    const config = loadConfig({ PORT: '8080', SSRF_ALLOW_PRIVATE: 'true', CLUSTER_MULTIPLE_LOGIN: 'false' });
    expect(config.PORT).toBe(8080);
    expect(config.SSRF_ALLOW_PRIVATE).toBe(true);
    expect(config.CLUSTER_MULTIPLE_LOGIN).toBe(false);
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ MONGODB_URI: 'postgres://x' }, 'MONGODB_URI'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ OAUTH_CLIENTS: 'not json' }, 'OAUTH_CLIENTS'],
    [{ OAUTH_CLIENTS: '[{"name":""}]' }, 'OAUTH_CLIENTS'],
    [{ TOKEN_KEY: 'short' }, 'TOKEN_KEY'],
    [{ SSRF_ALLOW_PRIVATE: 'maybe' }, 'SSRF_ALLOW_PRIVATE'],
    [{ CORS_ORIGINS: 'https://app.example.com/path' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: '*' }, 'CORS_ORIGINS'],
    [{ OAUTH_LOGOUT_REDIRECT_URIS: 'javascript:alert(1)' }, 'OAUTH_LOGOUT_REDIRECT_URIS'],
    [{ TRUST_PROXY: '10.0.0.0/99' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: 'my-proxy' }, 'TRUST_PROXY'],
    [{ HSTS_MAX_AGE_SECONDS: '-1' }, 'HSTS_MAX_AGE_SECONDS'],
    [{ COOKIE_SECURE: 'sometimes' }, 'COOKIE_SECURE'],
    // Cluster logins refuse longer credentials: such an admin password could never be used.
    [{ CLUSTER_ADMIN_PASSWORD: 'P@88w0rd'.repeat(33) }, 'CLUSTER_ADMIN_PASSWORD'],
    // Node fires a timer of 2^31 ms or more after 1 ms: such a timeout would be none at all.
    [{ SHUTDOWN_TIMEOUT_MS: '3000000000' }, 'SHUTDOWN_TIMEOUT_MS'],
    [{ REQUEST_TIMEOUT_MS: String(2 ** 31) }, 'REQUEST_TIMEOUT_MS'],
    [{ RESPONSE_STALL_TIMEOUT_MS: '3000000000' }, 'RESPONSE_STALL_TIMEOUT_MS'],
    [{ OUTBOUND_TIMEOUT_MS: '3000000000' }, 'OUTBOUND_TIMEOUT_MS'],
    // Without a scheme, `localhost:8080/v1` parses as a URL of scheme `localhost`.
    [{ OPENAI_BASE_URL: 'localhost:8080/v1' }, 'OPENAI_BASE_URL'],
    [{ TEAM_TOKEN_AUTH_URL: 'ftp://auth.example.com/token' }, 'TEAM_TOKEN_AUTH_URL'],
    [{ SANDBOX_URL: 'sandbox:3000' }, 'SANDBOX_URL'],
  ])('rejects %o naming %s', (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(name));
  });

  it('requires secrets in production, naming each', () => {
    let message = '';
    try {
      loadConfig({ NODE_ENV: 'production', TOKEN_KEY: 'a-long-enough-token-key' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/ROOT_KEY: required/);
    expect(message).toMatch(/CLUSTER_JWT_SECRET: required/);
    expect(message).not.toMatch(/TOKEN_KEY: required/);
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ PORT: '' }).PORT).toBe(3000);
  });

  it('parses OAUTH_CLIENTS', () => {
    const config = loadConfig({ OAUTH_CLIENTS: '[{"name":"console","secret":"s3cret"}]' });
    expect(config.OAUTH_CLIENTS).toEqual([{ name: 'console', secret: 's3cret' }]);
  });

  it('parses the HTTP policy variables', () => {
    const defaults = loadConfig({});
    expect(defaults).toMatchObject({ TRUST_PROXY: false, CORS_ORIGINS: [], OAUTH_LOGOUT_REDIRECT_URIS: [], HSTS_MAX_AGE_SECONDS: 0, COOKIE_SECURE: false });
    const config = loadConfig({
      TRUST_PROXY: '10.0.0.0/8, loopback ,::1',
      CORS_ORIGINS: 'https://app.example.com, http://localhost:5173/',
      OAUTH_LOGOUT_REDIRECT_URIS: 'https://console.example.com,https://sso.example.com/out',
      HSTS_MAX_AGE_SECONDS: '600',
      COOKIE_SECURE: 'true',
    });
    expect(config.TRUST_PROXY).toEqual(['10.0.0.0/8', 'loopback', '::1']);
    expect(config.CORS_ORIGINS).toEqual(['https://app.example.com', 'http://localhost:5173/']);
    expect(config.OAUTH_LOGOUT_REDIRECT_URIS).toEqual(['https://console.example.com', 'https://sso.example.com/out']);
    expect(config).toMatchObject({ HSTS_MAX_AGE_SECONDS: 600, COOKIE_SECURE: true });
    // `true` is one proxy: the address it appended, never the client's own leftmost entries.
    expect(loadConfig({ TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(1);
    expect(loadConfig({ TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
  });

  it('derives FILE_TOKEN_KEY from TOKEN_KEY when unset, so every replica and restart agrees', () => {
    const one = loadConfig({ TOKEN_KEY: 'a-long-enough-token-key' });
    const two = loadConfig({ TOKEN_KEY: 'a-long-enough-token-key' });
    expect(one.FILE_TOKEN_KEY).toBe(two.FILE_TOKEN_KEY);
    expect(one.FILE_TOKEN_KEY).not.toBe(one.TOKEN_KEY);
    expect(one.generatedSecrets).not.toContain('FILE_TOKEN_KEY');
    expect(loadConfig({ TOKEN_KEY: 'another-long-token-key' }).FILE_TOKEN_KEY).not.toBe(one.FILE_TOKEN_KEY);
    expect(loadConfig({ TOKEN_KEY: 'a-long-enough-token-key', FILE_TOKEN_KEY: 'explicit-file-token-key' }).FILE_TOKEN_KEY).toBe('explicit-file-token-key');
  });
});
