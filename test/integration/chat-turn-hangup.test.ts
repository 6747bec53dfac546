import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/domain/token-count.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { HELD_USAGE, type HangupRig, openCompletion, PARTIAL, savedTurn, startHangupRig, usageRecords, waitFor } from './chat-hangup-helpers.js';
import { createPublishedApp, sseFrames } from './chat-helpers.js';

/**
 * A client that hangs up while a model answers (the web client's Stop button, or a client reading
 * most of an answer): the turn is saved with what ran (the question, the partial answer, the
 * steps that finished), its usage is recorded and its API key or share link charged. Before, the
 * abort failed the turn: nothing saved, nothing billed, so a key's point limit could be bypassed.
 */
let rig: HangupRig;
let token: string;

const start = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] };
const chatNode = (nodeId: string, name: string, systemPrompt: string, extra: Record<string, unknown>[] = []) => ({
  nodeId,
  flowNodeType: 'chatNode',
  name,
  inputs: [
    { key: 'model', value: 'fake-llm' },
    { key: 'systemPrompt', value: systemPrompt },
    { key: 'history', value: 0 },
    { key: 'userChatInput', value: ['start', 'userChatInput'], valueType: 'string' },
    ...extra,
  ],
  outputs: [{ id: 'answerText', key: 'answerText', valueType: 'string' }],
});
const edge = (source: string, target: string) => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left` });
/** start → First (answers at once, not shown) → Second (its provider holds the answer open). */
const twoSteps = (held: string) => ({
  nodes: [start, chatNode('first', 'First', 'Be brief.', [{ key: 'isResponseAnswerText', value: false }]), chatNode('second', 'Second', held)],
  edges: [edge('start', 'first'), edge('first', 'second')],
  chatConfig: {},
});
const oneStep = (held: string) => ({ nodes: [start, chatNode('ai', 'AI chat', held)], edges: [edge('start', 'ai')], chatConfig: {} });
/** Long enough that its prompt alone costs more than one point (fake-llm: 100 points per 1000 tokens). */
const QUESTION = 'Tell me a long story about the sea. '.repeat(100);

const keyPoints = (name: string) =>
  waitFor(async () => {
    const doc = await rig.t.app.mongo.db.collection('openapis').findOne({ name });
    return doc && doc.usagePoints > 0 ? (doc.usagePoints as number) : undefined;
  });
const completions = (headers: Record<string, string>, payload: Record<string, unknown>) => rig.t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers, payload });

beforeAll(async () => {
  rig = await startHangupRig();
  await createUser(rig.t, { username: 'hangup', password: 'password-h1' });
  token = await login(rig.t, 'hangup', 'password-h1');
}, 60_000);

afterAll(async () => {
  await rig?.close();
});

describe('a client that hangs up during a streamed model call', () => {
  it('saves the question, the partial answer and the finished step, records the usage and charges the key; a 1-point key is refused next', async () => {
    const { t, holds } = rig;
    const appId = await createPublishedApp(t, token, 'Hang-up stream', twoSteps('HOLD'));
    const key = await createApiKey(t, token, { name: 'one point', appId, limit: { maxUsagePoints: 1 } });
    const closedBefore = holds.closed;
    const turn = await openCompletion(rig, apiKeyHeaders(key), { chatId: 'hangup-1', responseChatItemId: 'ai-item-1', stream: true, detail: true, messages: [{ role: 'user', content: QUESTION }] });
    await turn.readUntilThenHangUp('First half');
    // The hang-up reaches the provider: its connection is closed.
    expect(await waitFor(() => (holds.closed > closedBefore ? true : undefined))).toBe(true);

    const saved = await savedTurn(t, appId, 'hangup-1');
    expect(saved).toBeDefined();
    expect(saved.human.value).toEqual([{ type: 'text', text: { content: QUESTION } }]);
    expect(saved.ai.dataId).toBe('ai-item-1');
    expect(saved.ai.value).toEqual([{ type: 'text', text: { content: PARTIAL } }]);
    expect((saved.ai.responseData as { moduleName: string }[]).map((r) => r.moduleName)).toEqual(['Start', 'First', 'Second']);
    const chat = await t.app.mongo.db.collection('chats').findOne({ appId: new ObjectId(appId), chatId: 'hangup-1' });
    expect(chat?.source).toBe('api');

    const [record] = await usageRecords(t, appId);
    expect(record?.source).toBe('api');
    const [first, second] = record!.list as { moduleName: string; tokens: number; amount: number }[];
    // The finished step with the provider's count; the cut one (no usage chunk came) estimated:
    // its prompt (the question and more) and the part it answered.
    expect(first).toMatchObject({ moduleName: 'First', tokens: 15 });
    expect(second!.moduleName).toBe('Second');
    expect(second!.tokens).toBeGreaterThanOrEqual(countTokens(QUESTION) + countTokens(PARTIAL));
    expect(record!.totalPoints).toBeGreaterThan(1);
    expect(await keyPoints('one point')).toBeCloseTo(record!.totalPoints as number, 6);

    const refused = await completions(apiKeyHeaders(key), { chatId: 'hangup-1', messages: [{ role: 'user', content: 'and then?' }] });
    expect(refused.statusCode).toBe(403);
  });

  it("counts the provider's tokens when its usage chunk came before the hang-up", async () => {
    const { t } = rig;
    const appId = await createPublishedApp(t, token, 'Hang-up usage', oneStep('HOLD-USAGE'));
    const turn = await openCompletion(rig, authHeaders(token), { appId, chatId: 'hangup-usage', stream: true, messages: [{ role: 'user', content: 'a story' }] });
    await turn.readUntilThenHangUp('First half');
    const saved = await savedTurn(t, appId, 'hangup-usage');
    expect(saved?.ai.value).toEqual([{ type: 'text', text: { content: PARTIAL } }]);
    const [record] = await usageRecords(t, appId);
    expect(record?.list).toEqual([expect.objectContaining({ moduleName: 'AI chat', tokens: HELD_USAGE.prompt_tokens + HELD_USAGE.completion_tokens })]);
  });

  it('through a share link: the link is charged, and a 1-point link is refused next', async () => {
    const { t } = rig;
    const appId = await createPublishedApp(t, token, 'Hang-up share', oneStep('HOLD'));
    const shareId = await ok(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Limited', limit: { maxUsagePoints: 1 } });
    const visitor = { shareId, outLinkUid: 'visitor-1' };
    const turn = await openCompletion(rig, {}, { ...visitor, chatId: 'hangup-share', stream: true, messages: [{ role: 'user', content: QUESTION }] });
    await turn.readUntilThenHangUp('First half');
    expect((await savedTurn(t, appId, 'hangup-share'))?.ai.value).toEqual([{ type: 'text', text: { content: PARTIAL } }]);
    const [record] = await usageRecords(t, appId);
    const charged = await waitFor(async () => {
      const link = await t.app.mongo.db.collection('outlinks').findOne({ shareId });
      return link && link.usagePoints > 0 ? (link.usagePoints as number) : undefined;
    });
    expect(charged).toBeCloseTo(record!.totalPoints as number, 6);
    const refused = await completions({}, { ...visitor, chatId: 'hangup-share', messages: [{ role: 'user', content: 'more' }] });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ statusText: 'linkUnInvalid' });
  });

  it('a provider breaking off is still its failure: an error frame, nothing saved or billed', async () => {
    const { t } = rig;
    const appId = await createPublishedApp(t, token, 'Broken provider', oneStep('BREAK'));
    const res = await completions(authHeaders(token), { appId, chatId: 'broken-1', stream: true, messages: [{ role: 'user', content: 'a story' }] });
    const error = sseFrames(res.body).find((frame) => frame.event === 'error');
    expect(JSON.parse(error!.data)).toMatchObject({ code: 502, statusText: 'badGateway' });
    await t.app.identity.usage.drain();
    expect(await t.app.mongo.db.collection('chatitems').countDocuments({ appId: new ObjectId(appId) })).toBe(0);
    expect(await t.app.mongo.db.collection('usages').countDocuments({ appId: new ObjectId(appId) })).toBe(0);
  });
});

describe('a client that hangs up during a model call answered as JSON', () => {
  it('(stream false, detail false) saves the question, records the prompt it sent and charges the key', async () => {
    const { t, holds } = rig;
    const appId = await createPublishedApp(t, token, 'Hang-up JSON', oneStep('HOLD'));
    const key = await createApiKey(t, token, { name: 'json key', appId, limit: { maxUsagePoints: 1 } });
    const startedBefore = holds.started;
    const closedBefore = holds.closed;
    const turn = await openCompletion(rig, apiKeyHeaders(key), { chatId: 'hangup-json', stream: false, detail: false, messages: [{ role: 'user', content: QUESTION }] });
    expect(await waitFor(() => (holds.started > startedBefore ? true : undefined))).toBe(true);
    turn.hangUp();
    expect(await waitFor(() => (holds.closed > closedBefore ? true : undefined))).toBe(true);

    const saved = await savedTurn(t, appId, 'hangup-json');
    expect(saved).toBeDefined();
    expect(saved.human.value).toEqual([{ type: 'text', text: { content: QUESTION } }]);
    // No answer arrived: the AI item holds none, and the step that was cut.
    expect(saved.ai.value).toEqual([]);
    expect((saved.ai.responseData as { moduleName: string }[]).map((r) => r.moduleName)).toEqual(['Start', 'AI chat']);
    const [record] = await usageRecords(t, appId);
    const [line] = record!.list as { tokens: number }[];
    // The prompt that was sent, estimated (the provider reported nothing).
    expect(line!.tokens).toBeGreaterThanOrEqual(countTokens(QUESTION));
    expect(await keyPoints('json key')).toBeCloseTo(record!.totalPoints as number, 6);
    const refused = await completions(apiKeyHeaders(key), { messages: [{ role: 'user', content: 'again' }] });
    expect(refused.statusCode).toBe(403);
  });
});
