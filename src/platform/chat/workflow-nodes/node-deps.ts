/** What the I/O node runners need, built once per run by the chat service. */
import { type LlmEndpoint, maxTemperatureOf } from '../../../infra/llm-stream.js';
import type { LLMModel } from '../../../domain/models.js';
import { usagePoints } from '../../../domain/usage-points.js';
import type { NodeUsage } from '../../../domain/workflow/types.js';

export interface ResolvedLlm {
  model: LLMModel;
  endpoint: LlmEndpoint;
}

export interface DatasetSearchRequest {
  teamId: string;
  datasetIds: string[];
  /** The question and its rewrites, searched each and merged. */
  queries: string[];
  limit: number;
  similarity: number;
  searchMode: string;
  usingReRank: boolean;
  /** The turn's abort signal: the search's provider calls (the query embedding) are cut by it. */
  signal?: AbortSignal;
}

export interface DatasetSearchAnswer {
  list: { id: string; q: string; a: string; datasetId: string; collectionId: string; sourceName: string; sourceId?: string; chunkIndex: number; score: unknown[] }[];
  /** The query embeddings' usage line (the vector model's name, tokens, points). */
  usage: { moduleName: string; totalPoints: number; model: string; tokens: number };
}

export type DatasetSearcher = (request: DatasetSearchRequest) => Promise<DatasetSearchAnswer>;

export type SystemPluginRunner = (name: string, inputs: Record<string, unknown>, signal?: AbortSignal) => Promise<Record<string, unknown>>;

export interface HttpCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** The turn's abort signal: the call is cut (its connection closed) once the client hung up. */
  signal?: AbortSignal;
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
  /**
   * The turn's abort signal (its client hung up): a node's model calls are cut by it, and its
   * other outgoing calls end with it (call-cut.ts untilCut).
   */
  signal: AbortSignal;
  /**
   * Posts a code run to the operator's sandbox (SANDBOX_URL, `/sandbox/js`); absent when none is
   * configured. Not through the guard for users' URLs: the sandbox is usually on the internal
   * network, and no workflow chooses where this goes.
   */
  runSandbox?: (body: string, signal?: AbortSignal) => Promise<{ status: number; text: string }>;
  /**
   * Downloads a file for readFiles and vision (through the SSRF guard), up to `maxBytes` (default:
   * the upload limit). `signal` (the turn's) cuts the download.
   */
  download: (url: string, maxBytes?: number, signal?: AbortSignal) => Promise<{ buffer: Buffer; contentType?: string }>;
  /** customFeedback texts collected during the run, saved on the AI item. */
  customFeedbacks: string[];
  /**
   * Runs a built-in system plugin (`community-*` id or bare name); rejects when there is none.
   * `signal` (the turn's) cuts the plugin's own calls (fetchUrl's download).
   */
  runSystemPlugin?: SystemPluginRunner;
}

/** The node dependencies of one run; the rest (`SharedNodeDeps`) is the same for every run. */
export type RunNodeDeps = Pick<NodeDeps, 'teamId' | 'appId' | 'chatId' | 'responseChatItemId' | 'signal' | 'customFeedbacks'>;
/**
 * `httpCall` and `download` are bound to the run's team (a call to this service's own plugin
 * routes names it; a chat file whose link expired is read for the run's own team and app).
 */
export type SharedNodeDeps = Omit<NodeDeps, keyof RunNodeDeps | 'httpCall' | 'download'>;

/**
 * The LLM of a node: the named model, else the default one. The reference falls back to its
 * first model, so templates naming a model this deployment lacks (gpt-3.5-turbo …) still run.
 */
export function nodeLlm(deps: Pick<NodeDeps, 'resolveLlm'>, model: unknown): ResolvedLlm {
  try {
    return deps.resolveLlm(model);
  } catch (error) {
    if (typeof model !== 'string' || !model) throw error;
    return deps.resolveLlm(undefined);
  }
}

/**
 * A node's temperature, on the reference's 0–10 scale, mapped onto the model's range (at least
 * 0.01). chatRequestBody clamps it to the same range again, as it clamps every caller's.
 */
export function modelTemperature(model: LLMModel, temperature: unknown): number {
  const scale = Number(temperature);
  const max = maxTemperatureOf(model);
  if (!Number.isFinite(scale)) return 0.01;
  return Math.max(0.01, Number((max * (Math.min(Math.max(scale, 0), 10) / 10)).toFixed(2)));
}

/** Points as the reference bills a language model: price per 1000 tokens. */
export function pointsFor(model: LLMModel | undefined, tokens: number): number {
  return usagePoints(model, tokens);
}

/** A model call's usage line: its tokens, and the prompt and answer tokens they add up. */
export function modelUsage(moduleName: string, llm: ResolvedLlm, totalPoints: number, counts: { tokens: number; inputTokens: number; outputTokens: number }): NodeUsage {
  return { moduleName, totalPoints, model: llm.model.name, tokens: counts.tokens, inputTokens: counts.inputTokens, outputTokens: counts.outputTokens };
}
