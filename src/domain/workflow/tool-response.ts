/** What a tool called by the agent node answers the model (the reference's tool response text). */

/** Empty answers (an empty list or object) are no tool response: the dispatch keeps the last real one, as the reference. */
const isEmptyResponse = (value: unknown) =>
  value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0) || (typeof value === 'object' && Object.keys(value).length === 0);

/**
 * What a tool's run answers the model: the last node's non-empty tool response (objects as
 * indented JSON), else what it said, else `none`.
 */
export function toolResponseText(responses: readonly unknown[], said: string): string {
  const last = [...responses].reverse().find((value) => !isEmptyResponse(value));
  if (last === undefined) return said || 'none';
  return typeof last === 'object' ? JSON.stringify(last, null, 2) : String(last);
}
