/**
 * Interactive states this service handed out. A run that stops at an interactive node (a
 * userSelect) answers the state to resume from: the node to enter, the edges' states and the
 * outputs of the nodes that ran. A later request may bring that state back in its messages (a
 * run without a stored chat has nowhere else to take it from), and the run then starts from it:
 * at the node it names, with the outputs it lists. Taken unchecked, as the reference takes it, a
 * share-link visitor could enter any node of the owner's workflow with outputs of their own
 * making (a check node's verdict, an HTTP node's parameters). So each state handed out carries
 * an HMAC of what the resume reads, under the deployment's TOKEN_KEY, and a state a request
 * brings is resumed only with a valid one (or when it is the state the chat stored).
 */
import { createHmac } from 'node:crypto';
import type { WorkflowInteractive } from '../../domain/workflow/types.js';
import { sameSecret } from '../../infra/secret-compare.js';

/** JSON with object keys sorted: the same state gives the same text however a client reordered it. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${sortedJson(record[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function createInteractiveSeals(key: string) {
  /** What a resume reads of the state (not the question's text nor the option picked), for one app. */
  const sealOf = (appId: string, interactive: WorkflowInteractive): string =>
    createHmac('sha256', key)
      .update(`interactive\n${appId}\n`)
      // Through JSON first: what a client sends back went through it (a Date output is its text then).
      .update(sortedJson(JSON.parse(JSON.stringify([interactive.type, interactive.entryNodeIds, interactive.memoryEdges, interactive.nodeOutputs]))))
      .digest('base64url');

  return {
    /** The state with its seal, as handed out. */
    seal(appId: string, interactive: WorkflowInteractive): WorkflowInteractive {
      return Object.assign({}, interactive, { seal: sealOf(appId, interactive) });
    },
    /** Whether this service handed out `interactive` for this app, or it equals `stored` (the chat's own). */
    isTrusted(appId: string, interactive: WorkflowInteractive, stored: WorkflowInteractive | undefined): boolean {
      const expected = sealOf(appId, interactive);
      if (typeof interactive.seal === 'string' && sameSecret(interactive.seal, expected)) return true;
      return stored !== undefined && sealOf(appId, stored) === expected;
    },
  };
}

export type InteractiveSeals = ReturnType<typeof createInteractiveSeals>;
