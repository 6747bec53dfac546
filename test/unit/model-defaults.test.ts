import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { defaultCatalog } from '../../src/platform/system/model-config.js';

describe('the built-in model catalog', () => {
  it('offers its language model everywhere the web client filters models by use, query extension included', () => {
    const [llm] = defaultCatalog({} as Config).llmModels;
    expect(llm).toMatchObject({ usedInClassify: true, usedInExtractFields: true, usedInToolCall: true, usedInQueryExtension: true, datasetProcess: true });
  });
});
