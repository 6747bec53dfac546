import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A model configuration (MODEL_CONFIG_PATH) whose LLM and embedding model are served at `baseUrl`. */
export async function writeFakeModelConfig(baseUrl: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'crash-models-'));
  const path = join(dir, 'config.json');
  await writeFile(
    path,
    JSON.stringify({
      llmModels: [{ model: 'fake-llm', name: 'Fake LLM', maxContext: 16000, maxResponse: 4000, quoteMaxToken: 8000, datasetProcess: true, requestUrl: baseUrl }],
      vectorModels: [{ model: 'fake-embed', name: 'Fake embed', provider: 'openai', defaultToken: 512, maxToken: 3000, weight: 100, requestUrl: baseUrl }],
    }),
  );
  return path;
}
