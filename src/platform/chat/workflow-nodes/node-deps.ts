/** What the I/O node runners need, built once per run by the chat service. */
import type { LlmEndpoint } from '../../../infra/llm-stream.js';
import type { LLMModel } from '../../system/model-types.js';

export interface ResolvedLlm {
  model: LLMModel;
  endpoint: LlmEndpoint;
}

export interface DatasetSearchRequest {
  teamId: string;
  datasetIds: string[];
  text: string;
  limit: number;
  similarity: number;
  searchMode: string;
  usingReRank: boolean;
}

export interface DatasetSearchAnswer {
  list: { id: string; q: string; a: string; datasetId: string; collectionId: string; sourceName: string; sourceId?: string; chunkIndex: number; score: unknown[] }[];
  tokens: number;
  model?: string;
}

export type DatasetSearcher = (request: DatasetSearchRequest) => Promise<DatasetSearchAnswer>;

export interface HttpCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

export interface NodeDeps {
  teamId: string;
  appId: string;
  chatId: string;
  responseChatItemId: string;
  resolveLlm: (model: unknown) => ResolvedLlm;
  searchDatasets?: DatasetSearcher;
  /** Outbound HTTP through the SSRF guard; resolves to status and text, rejects on network failure. */
  httpCall: (call: HttpCall) => Promise<{ status: number; text: string }>;
  signal: AbortSignal;
  /** The code node's sandbox base URL (SANDBOX_URL). */
  sandboxUrl?: string;
  /** Downloads a file for readFiles (through the SSRF guard). */
  download: (url: string) => Promise<{ buffer: Buffer; contentType?: string }>;
  /** customFeedback texts collected during the run, saved on the AI item. */
  customFeedbacks: string[];
}

/** Points as the reference bills: price per 1000 tokens. */
export function pointsFor(model: LLMModel | undefined, tokens: number): number {
  return ((model?.charsPointsPrice ?? 0) * tokens) / 1000;
}
