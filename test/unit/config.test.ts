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
});
