/**
 * JSON POST to a third-party model provider (embeddings, rerank, chat) with a timeout and
 * errors that say what went wrong: the HTTP status and the provider's own message, never the
 * API key. Callers decide whether an error is permanent (`isInvalidRequest`) or worth a retry.
 */
import { ConnectionError, isAbortError, providerErrorText, ProviderReplyError, type ProviderResponse, providerRequest } from './provider-client.js';
import { withoutTrailingSlashes } from './join-url.js';

export type ProviderErrorKind = 'http' | 'timeout' | 'network' | 'invalid_response' | 'invalid_input' | 'not_configured';

export class ProviderError extends Error {
  override name = 'ProviderError';

  constructor(
    message: string,
    readonly kind: ProviderErrorKind,
    /** HTTP status of the provider's answer, when there was one. */
    readonly status?: number,
  ) {
    super(message);
  }

  /** The provider refused the input itself (4xx other than auth/rate limits): retrying cannot help. */
  get isInvalidRequest(): boolean {
    if (this.kind === 'invalid_input') return true;
    return this.kind === 'http' && this.status !== undefined && this.status >= 400 && this.status < 500 && ![401, 403, 408, 409, 429].includes(this.status);
  }
}

export function isProviderError(error: unknown): error is ProviderError {
  return error instanceof ProviderError;
}

/** `base` + `path` unless `base` already ends with `path` (a full endpoint URL was configured). */
export function endpointUrl(base: string, path: string): string {
  const trimmed = withoutTrailingSlashes(base);
  return trimmed.endsWith(path) ? trimmed : `${trimmed}${path}`;
}

/**
 * The provider's own message from the usual error bodies (`{error:{message}}`, `{message}`,
 * `{detail}`) or the text, with the API key that was sent masked.
 */
function providerMessage(text: string, apiKey: string | undefined): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    const candidate =
      typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message ?? (typeof body.detail === 'string' ? body.detail : undefined));
    if (typeof candidate === 'string' && candidate.trim()) return providerErrorText(candidate, apiKey, 500);
  } catch {
    // not JSON: fall through to the raw text
  }
  return providerErrorText(text, apiKey, 500);
}

export interface ProviderRequest {
  url: string;
  body: unknown;
  apiKey?: string;
  timeoutMs: number;
  /** Names the provider in messages, e.g. "embedding model text-embedding-3-small". */
  label: string;
  /** Ends the call early (a worker stopping). */
  signal?: AbortSignal;
}

export async function postProviderJson<T>(request: ProviderRequest): Promise<T> {
  const { url, body, apiKey, timeoutMs, label, signal } = request;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new ProviderError(`The ${label} has an invalid URL: ${url}`, 'not_configured');
  }
  let response: ProviderResponse;
  try {
    response = await providerRequest(target, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
      },
      body: JSON.stringify(body),
      timeoutMs,
      signal,
    });
  } catch (error) {
    if (isAbortError(error)) throw new ProviderError(`The ${label} did not answer within ${timeoutMs} ms`, 'timeout');
    const reason = error instanceof ConnectionError ? (error.code ?? error.message) : (error as Error).message;
    throw new ProviderError(`The ${label} is unreachable at ${target.origin}: ${reason}`, 'network');
  }

  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    const kind = isAbortError(error) ? 'timeout' : error instanceof ProviderReplyError ? 'invalid_response' : 'network';
    throw new ProviderError(`The ${label} answer could not be read: ${(error as Error).message}`, kind, response.status);
  }
  if (!response.ok) {
    const message = providerMessage(text, apiKey);
    throw new ProviderError(`The ${label} answered HTTP ${response.status}${message ? `: ${message}` : ''}`, 'http', response.status);
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ProviderError(`The ${label} answered with invalid JSON`, 'invalid_response', response.status);
  }
}
