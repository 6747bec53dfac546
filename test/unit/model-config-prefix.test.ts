import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Config, ConfigError } from '../../src/config.js';
import { parseApiKeyCredential } from '../../src/platform/auth/authenticator.js';
import { generateApiKey } from '../../src/platform/identity/api-keys.service.js';
import { loadModelCatalog } from '../../src/platform/system/model-config.js';

async function configWith(systemEnv: Record<string, unknown>): Promise<Config> {
  const dir = await mkdtemp(join(tmpdir(), 'model-config-'));
  const path = join(dir, 'config.json');
  await writeFile(path, JSON.stringify({ systemEnv }));
  return { MODEL_CONFIG_PATH: path, UPLOAD_LIMIT_BYTES: 1024 * 1024 } as Config;
}

describe('systemEnv.openapiPrefix in MODEL_CONFIG_PATH', () => {
  it.each(['my-org', 'a b', 'x\u00e9'])('refuses %j at start-up, naming the field', async (openapiPrefix) => {
    const loading = loadModelCatalog(await configWith({ openapiPrefix }));
    await expect(loading).rejects.toBeInstanceOf(ConfigError);
    await expect(loading).rejects.toThrow(/systemEnv\.openapiPrefix: must be letters, digits or _ only/);
  });

  it('refuses a prefix that is not a string', async () => {
    await expect(loadModelCatalog(await configWith({ openapiPrefix: 42 }))).rejects.toThrow(/systemEnv\.openapiPrefix/);
  });

  it('accepts a plain prefix, whose keys read back whole, and keeps other systemEnv fields', async () => {
    const catalog = await loadModelCatalog(await configWith({ openapiPrefix: 'my_org2', vectorMaxProcess: 3, custom: { a: 1 } }));
    expect(catalog.systemEnv).toMatchObject({ openapiPrefix: 'my_org2', vectorMaxProcess: 3, qaMaxProcess: 15, custom: { a: 1 } });
    const key = generateApiKey('my_org2');
    expect(parseApiKeyCredential(`Bearer ${key}`)).toEqual({ key });
  });

  it('loads an empty or null prefix (the key route then uses the default, fastgpt)', async () => {
    expect((await loadModelCatalog(await configWith({ openapiPrefix: '' }))).systemEnv.openapiPrefix).toBe('');
    expect((await loadModelCatalog(await configWith({ openapiPrefix: null }))).systemEnv.openapiPrefix).toBeNull();
  });
});
