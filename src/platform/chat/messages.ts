/**
 * What a caller is shown of a run's node responses: one rule for the completions answer (the
 * stream's `flowResponses` frame and the non-stream `responseData` alike), getResData and the
 * share and team windows' init.
 *
 * - A member or API key sees them whole (the secrets their nodes sent are masked where the nodes
 *   build them: workflow-nodes/shown-secrets.ts).
 * - A share or team-space visitor sees the public filter (filterPublicResponses: the dataset
 *   quotes, plugin outputs and node types).
 * - A visitor of a share link whose `responseDetail` is off (the link owner's "no quotes or
 *   details") sees none; a plugin app's are shown anyway, its answer being its plugin output.
 */
import { filterPublicResponses } from '../../domain/workflow/messages.js';
import type { ChatCaller } from './chat-caller.js';

export interface ResponseView {
  /** Share and team callers: the public filter only. */
  publicOnly: boolean;
  /** Whether node responses reach the caller at all. */
  detail: boolean;
}

/** The view of a chat caller, for an app that is a plugin or not. */
export function responseViewOf(caller: Pick<ChatCaller, 'publicOnly' | 'responseDetail'>, isPlugin: boolean): ResponseView {
  return { publicOnly: caller.publicOnly, detail: caller.responseDetail || isPlugin };
}

/** The node responses `view` shows (a copy where anything is left out). */
export function shownResponses(responses: readonly Record<string, unknown>[], view: ResponseView): Record<string, unknown>[] {
  if (!view.detail) return [];
  return view.publicOnly ? filterPublicResponses(responses) : [...responses];
}
