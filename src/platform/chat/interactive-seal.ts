/**
 * Interactive states this service handed out. A run that stops at an interactive node (a
 * userSelect) answers the state to resume from: the node to enter, the edges' states and the
 * outputs of the nodes that ran. A later request may bring that state back in its messages (a
 * run without a stored chat has nowhere else to take it from), and the run then starts from it:
 * at the node it names, with the outputs it lists. Taken unchecked, as the reference takes it, a
 * share-link visitor could enter any node of the owner's workflow with outputs of their own
 * making (a check node's verdict, an HTTP node's parameters).
 *
 * So each state handed out carries a seal, `<issuedAt>.<mac>`: an HMAC under the deployment's
 * TOKEN_KEY of what the resume reads, the app, the caller the chat belongs to (chatOwnerOf), the
 * chat id (none for a run without one), the graph it came from (the published version the run
 * read, else the app's draft by its draft mark, or the node ids of the graph the editor sent) and
 * the issue time. A state a request brings is resumed only by that caller, in that chat, while
 * the app runs that graph (the one the run reads, checked and sealed from the same read), and for
 * INTERACTIVE_STATE_TTL_MS: a state copied from another visitor, or kept from before a republish
 * or a draft edit, is refused. The chat's own stored
 * state (a turn continuing a chat by its chatId) resumes as stored, without a seal or a deadline.
 */
import { createHash, createHmac } from 'node:crypto';
import type { WorkflowInteractive } from '../../domain/workflow/types.js';
import { Errors } from '../../infra/errors.js';
import { sameSecret } from '../../infra/secret-compare.js';

/** How long a state handed out may be brought back in a request's messages. */
export const INTERACTIVE_STATE_TTL_MS = 24 * 60 * 60 * 1000;
/** An issue time this far ahead of this process's clock is taken (another replica's clock may run ahead). */
const CLOCK_SKEW_MS = 5 * 60 * 1000;
/** `<issuedAt ms>.<base64url HMAC-SHA256>`. */
const SEAL_FORMAT = /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/;

/** What a state is handed out for, besides its app. */
export interface SealBinding {
  /** Whose chat it is (chat-caller.ts chatOwnerOf). */
  caller: string;
  /** The chat's id; '' for a run without one. */
  chatId: string;
  /** The graph the run came from: graphOfVersion, graphOfDraft or graphOfNodes (app-source.ts runGraph reads the first two). */
  graph: string;
}

/** The seals of one turn: what it hands out and what it resumes, for its caller, chat and graph. */
export interface TurnSeals {
  /** The state with its seal, as handed out. */
  seal(appId: string, interactive: WorkflowInteractive): WorkflowInteractive;
  /**
   * Throws the 400 saying why, unless `interactive`, brought by a request, may be resumed: it is
   * the chat's own `stored` state, or carries a seal for this app and turn that has not expired.
   */
  assertResumable(appId: string, interactive: WorkflowInteractive, stored: WorkflowInteractive | undefined): void;
}

/** The graph of a stored app: its published version's id, else its draft's mark (app-source.ts draftMarkOf). */
export const graphOfVersion = (versionId: string): string => `version:${versionId}`;
export const graphOfDraft = (draftMark: string): string => `draft:${draftMark}`;

/** A graph a caller sent (the editor's chatTest): its node ids, hashed. */
export function graphOfNodes(nodes: readonly { nodeId?: unknown }[]): string {
  const ids = nodes.map((node) => String(node.nodeId ?? '')).sort();
  return `nodes:${createHash('sha256').update(JSON.stringify(ids)).digest('base64url')}`;
}

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

/** What a resume reads of the state (not the question's text nor the option picked). */
const resumedText = (interactive: WorkflowInteractive): string =>
  // Through JSON first: what a client sends back went through it (a Date output is its text then).
  sortedJson(JSON.parse(JSON.stringify([interactive.type, interactive.entryNodeIds, interactive.memoryEdges, interactive.nodeOutputs])));

const NOT_ISSUED =
  'The interactive state in messages was not answered by this app to this caller, in this chat, from the version it runs now: send it back as it was answered (with its seal), or continue the chat by its chatId';
const EXPIRED = `The interactive state in messages expired: a state is resumed from messages for ${INTERACTIVE_STATE_TTL_MS / 3_600_000} hours after it was answered; ask again, or continue the chat by its chatId`;

/** `now` is read at each seal and check (tests move it). */
export function createInteractiveSeals(key: string, now: () => number = Date.now) {
  const macOf = (appId: string, binding: SealBinding, issuedAt: number, interactive: WorkflowInteractive): string =>
    createHmac('sha256', key)
      .update(JSON.stringify(['interactive/2', appId, binding.caller, binding.chatId, binding.graph, issuedAt]))
      .update('\n')
      .update(resumedText(interactive))
      .digest('base64url');

  function forTurn(binding: SealBinding): TurnSeals {
    return {
      seal(appId, interactive) {
        const issuedAt = Math.floor(now());
        return Object.assign({}, interactive, { seal: `${issuedAt}.${macOf(appId, binding, issuedAt, interactive)}` });
      },
      assertResumable(appId, interactive, stored) {
        if (stored !== undefined && resumedText(stored) === resumedText(interactive)) return;
        const parts = typeof interactive.seal === 'string' ? SEAL_FORMAT.exec(interactive.seal) : null;
        // A seal of the format before this one (no issue time) bound the app only: refused as any other.
        if (!parts) throw Errors.missingParams(NOT_ISSUED);
        const issuedAt = Number(parts[1]);
        if (!sameSecret(parts[2]!, macOf(appId, binding, issuedAt, interactive))) throw Errors.missingParams(NOT_ISSUED);
        const age = now() - issuedAt;
        if (age > INTERACTIVE_STATE_TTL_MS) throw Errors.missingParams(EXPIRED);
        if (age < -CLOCK_SKEW_MS) throw Errors.missingParams(NOT_ISSUED);
      },
    };
  }

  return { forTurn };
}

export type InteractiveSeals = ReturnType<typeof createInteractiveSeals>;
