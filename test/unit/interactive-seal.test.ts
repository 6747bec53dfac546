import { describe, expect, it } from 'vitest';
import type { WorkflowInteractive } from '../../src/domain/workflow/types.js';
import { createInteractiveSeals, graphOfNodes, graphOfVersion, INTERACTIVE_STATE_TTL_MS, type SealBinding } from '../../src/platform/chat/interactive-seal.js';

const STATE: WorkflowInteractive = {
  type: 'userSelect',
  params: { description: 'Continue?', userSelectOptions: [{ key: 'y', value: 'Confirm' }] },
  entryNodeIds: ['sel'],
  memoryEdges: [{ source: 'start', sourceHandle: 's', target: 'sel', targetHandle: 't', status: 'active' }],
  nodeOutputs: [{ nodeId: 'start', key: 'userChatInput', value: 'go' }],
};
const APP = 'app-1';
const BINDING: SealBinding = { caller: JSON.stringify(['share', 'link-1', 'visitor-a']), chatId: '', graph: graphOfVersion('v1') };
const ISSUED = Date.UTC(2026, 0, 1);

function sealsAt(clock: { now: number }) {
  return createInteractiveSeals('test-token-key', () => clock.now);
}

/** Whether the state handed out under BINDING at ISSUED resumes with this check, or the message it is refused with. */
function resume(check: { binding?: Partial<SealBinding>; appId?: string; at?: number; key?: string; edit?: (state: WorkflowInteractive) => WorkflowInteractive }): boolean | string {
  const clock = { now: ISSUED };
  const handed = sealsAt(clock).forTurn(BINDING).seal(APP, STATE);
  clock.now = check.at ?? ISSUED + 1_000;
  const seals = check.key ? createInteractiveSeals(check.key, () => clock.now) : sealsAt(clock);
  try {
    seals.forTurn({ ...BINDING, ...check.binding }).assertResumable(check.appId ?? APP, check.edit ? check.edit(handed) : handed, undefined);
    return true;
  } catch (error) {
    return (error as Error).message;
  }
}

const NOT_HANDED_OUT = expect.stringMatching(/^The interactive state in messages was not answered by this app to this caller/);
const EXPIRED = expect.stringMatching(/^The interactive state in messages expired/);

describe('interactive state seals', () => {
  it.each([
    ['the caller, chat and graph it was handed out for', {}, true],
    ['the same, reordered by the client (JSON keys)', { edit: (s: WorkflowInteractive) => JSON.parse(JSON.stringify({ seal: s.seal, nodeOutputs: s.nodeOutputs, memoryEdges: s.memoryEdges, entryNodeIds: s.entryNodeIds, params: s.params, type: s.type })) }, true],
    ['the same, another option picked', { edit: (s: WorkflowInteractive) => ({ ...s, params: { ...s.params, userSelectedVal: 'y' } }) }, true],
    ['just before it expires', { at: ISSUED + INTERACTIVE_STATE_TTL_MS }, true],
    ['another visitor of the same link', { binding: { caller: JSON.stringify(['share', 'link-1', 'visitor-b']) } }, NOT_HANDED_OUT],
    ['a team member', { binding: { caller: JSON.stringify(['member', 'team-1', 'tmb-1']) } }, NOT_HANDED_OUT],
    ['in a chat, handed out without one', { binding: { chatId: 'chat-1' } }, NOT_HANDED_OUT],
    ['another published version', { binding: { graph: graphOfVersion('v2') } }, NOT_HANDED_OUT],
    ["the editor's graph of the same nodes", { binding: { graph: graphOfNodes([{ nodeId: 'start' }, { nodeId: 'sel' }]) } }, NOT_HANDED_OUT],
    ['another app', { appId: 'app-2' }, NOT_HANDED_OUT],
    ["another deployment's key", { key: 'other-token-key' }, NOT_HANDED_OUT],
    ['after 24 hours', { at: ISSUED + INTERACTIVE_STATE_TTL_MS + 1 }, EXPIRED],
    ['its issue time moved later', { at: ISSUED + INTERACTIVE_STATE_TTL_MS + 1, edit: (s: WorkflowInteractive) => ({ ...s, seal: s.seal!.replace(/^\d+/, String(ISSUED + 1000)) }) }, NOT_HANDED_OUT],
    ['another entry node', { edit: (s: WorkflowInteractive) => ({ ...s, entryNodeIds: ['yes'] }) }, NOT_HANDED_OUT],
    ['outputs of its own making', { edit: (s: WorkflowInteractive) => ({ ...s, nodeOutputs: [{ nodeId: 'sel', key: 'selectResult', value: 'x' }] }) }, NOT_HANDED_OUT],
    ['no seal', { edit: (s: WorkflowInteractive) => ({ ...s, seal: undefined }) }, NOT_HANDED_OUT],
    ['a seal of the format before issue times (the MAC alone)', { edit: (s: WorkflowInteractive) => ({ ...s, seal: s.seal!.split('.')[1] }) }, NOT_HANDED_OUT],
  ])('%s', (_case, check, expected) => {
    expect(resume(check)).toEqual(expected);
  });

  it("resumes the chat's own stored state without a seal, whenever", () => {
    const clock = { now: ISSUED };
    const stored = sealsAt(clock).forTurn(BINDING).seal(APP, STATE);
    clock.now = ISSUED + 10 * INTERACTIVE_STATE_TTL_MS;
    const check = sealsAt(clock).forTurn({ ...BINDING, chatId: 'chat-1' });
    expect(() => check.assertResumable(APP, { ...STATE, seal: undefined }, stored)).not.toThrow();
    expect(() => check.assertResumable(APP, { ...STATE, entryNodeIds: ['yes'] }, stored)).toThrow(/not answered by this app/);
  });

  it('seals with the issue time it was handed out at', () => {
    const clock = { now: ISSUED };
    expect(sealsAt(clock).forTurn(BINDING).seal(APP, STATE).seal).toMatch(new RegExp(`^${ISSUED}\\.[\\w-]{43}$`));
  });
});
