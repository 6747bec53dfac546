/**
 * Failed outbound calls as the reference's HTTP client (axios) reports them: workflows read the
 * `error` output of the HTTP and code nodes and branch on its fields.
 */

export type HttpFailure = Error & { status?: number; data?: unknown; code?: string };

/** An error status: its message, name and code, the status and the parsed body as `data`. */
export function statusFailure(status: number, data: unknown): HttpFailure {
  return Object.assign(new Error(`Request failed with status code ${status}`), {
    name: 'AxiosError',
    status,
    data,
    code: status >= 500 ? 'ERR_BAD_RESPONSE' : 'ERR_BAD_REQUEST',
  });
}

/** The `error` output's object (the reference's formatHttpError). */
export function failureDetail(error: unknown, method: string): Record<string, unknown> {
  const failure = error as HttpFailure;
  return { message: failure.message, data: failure.data, name: failure.name, method, code: failure.code, status: failure.status };
}
