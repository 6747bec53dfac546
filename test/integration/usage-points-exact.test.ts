/**
 * The points charged to an API key or a share link all land, however many calls charge it at once
 * and through however many processes: FerretDB 1.x runs an update as read-then-write of the whole
 * document, so parallel `$inc`s (or an `$inc` and a `$set` of another field) lost one another and
 * left a limited key or link far below its real spend (40 parallel charges stored 2).
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/platform/identity/api-keys.repo.js';
import { credentialSubject } from '../../src/platform/identity/credential-epoch.js';
import { createOutLinksRepo } from '../../src/platform/outlinks/outlinks.repo.js';
import { buildReplica, type TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, createUser, login, whoami, whoamiProbe } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

const CHARGES = 40;

let t: TestApp;
let replica: TestApp;
let fake: FakeOpenAi;
let token: string;

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  replica = await buildReplica(t, { MODEL_CONFIG_PATH: t.config.MODEL_CONFIG_PATH as string, SSRF_ALLOW_PRIVATE: 'true' });
  await createUser(t, { username: 'exact-usage', password: 'password-eu1' });
  token = await login(t, 'exact-usage', 'password-eu1');
});

afterAll(async () => {
  await replica?.close();
  await t?.close();
  await fake?.close();
});

/** The subjects each revocation named, as a repository reports them. */
function recordingRevocations() {
  const revoked: (readonly string[] | undefined)[] = [];
  return { revoked, revocations: { revoked: async (subjects?: readonly string[]) => void revoked.push(subjects) } };
}

describe('charges through the repositories (two processes, each its own repository)', () => {
  it('API key: parallel charges, with touches and a limit change among them, all land', async () => {
    const db = t.app.mongo.db;
    const first = recordingRevocations();
    const second = recordingRevocations();
    const processes = [createApiKeysRepo(db, first.revocations), createApiKeysRepo(db, second.revocations)];
    const owner = { teamId: new ObjectId().toHexString(), tmbId: new ObjectId().toHexString() };
    const key = (await processes[0]!.insertWithin(10, { ...owner, apiKeyDigest: `digest-${new ObjectId().toHexString()}`, apiKeyTail: 'abcd', name: 'exact', limit: { maxUsagePoints: 1_000 } }))!;
    const at = new Date();
    await Promise.all([
      ...Array.from({ length: CHARGES }, (_, index) => processes[index % 2]!.addUsagePoints(key._id, 1.5)),
      ...Array.from({ length: 5 }, (_, index) => processes[index % 2]!.touch(key._id, new Date(at.getTime() + index), at)),
      processes[1]!.update(key._id, owner.teamId, { limit: { maxUsagePoints: 2_000 } }),
    ]);
    const stored = await processes[0]!.findInTeam(key._id, owner.teamId);
    expect(stored!.usagePoints).toBe(CHARGES * 1.5);
    expect(stored!.limit.maxUsagePoints).toBe(2_000);
    expect(stored!.lastUsedTime).toBeInstanceOf(Date);
    // Under its limit, charging revokes nothing; the update named the key.
    expect([...first.revoked, ...second.revoked]).toEqual([[credentialSubject.apiKey(key._id)]]);
  });

  it('API key: the charges reaching its limit move the epoch naming the key', async () => {
    const db = t.app.mongo.db;
    const { revoked, revocations } = recordingRevocations();
    const processes = [createApiKeysRepo(db, revocations), createApiKeysRepo(db, revocations)];
    const owner = { teamId: new ObjectId().toHexString(), tmbId: new ObjectId().toHexString() };
    const key = (await processes[0]!.insertWithin(10, { ...owner, apiKeyDigest: `digest-${new ObjectId().toHexString()}`, apiKeyTail: 'abcd', name: 'limited', limit: { maxUsagePoints: 30 } }))!;
    await Promise.all(Array.from({ length: CHARGES }, (_, index) => processes[index % 2]!.addUsagePoints(key._id, 1)));
    expect((await processes[0]!.findInTeam(key._id, owner.teamId))!.usagePoints).toBe(CHARGES);
    expect(revoked.length).toBeGreaterThan(0);
    for (const subjects of revoked) expect(subjects).toEqual([credentialSubject.apiKey(key._id)]);
  });

  it('share link: parallel charges, with touches and a limit change among them, all land', async () => {
    const db = t.app.mongo.db;
    const processes = [createOutLinksRepo(db), createOutLinksRepo(db)];
    const shareId = `exact-${new ObjectId().toHexString()}`;
    const ids = { teamId: new ObjectId().toHexString(), tmbId: new ObjectId().toHexString(), appId: new ObjectId().toHexString() };
    await processes[0]!.insert({ shareId, ...ids, type: 'share', name: 'exact link', responseDetail: false, limit: { maxUsagePoints: 1_000, QPM: 1_000 } });
    const link = (await processes[0]!.findByShareId(shareId))!;
    const at = Date.now();
    await Promise.all([
      ...Array.from({ length: CHARGES }, (_, index) => processes[index % 2]!.addUsage(shareId, 1.5, new Date(at + index))),
      ...Array.from({ length: 5 }, (_, index) => processes[index % 2]!.touch(shareId, new Date(at - 1_000), new Date(at - 2_000))),
      processes[1]!.update(link._id, { limit: { maxUsagePoints: 2_000, QPM: 1_000 } }),
    ]);
    const stored = (await processes[0]!.findByShareId(shareId))!;
    expect(stored.usagePoints).toBe(CHARGES * 1.5);
    expect(stored.limit.maxUsagePoints).toBe(2_000);
    // A charge's time (a touch only sets its older one when none is stored).
    expect(stored.lastTime!.getTime()).toBeGreaterThanOrEqual(at);
  });
});

describe('parallel completions through two replicas', () => {
  const completion = (app: TestApp, headers: Record<string, string>, payload: Record<string, unknown>) =>
    app.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers, payload });
  const spread = (count: number, send: (app: TestApp, index: number) => ReturnType<typeof completion>) =>
    Promise.all(Array.from({ length: count }, (_, index) => send(index % 2 === 0 ? t : replica, index)));

  async function recordedPoints(appId: string): Promise<number> {
    await t.app.identity.usage.drain();
    await replica.app.identity.usage.drain();
    const records = await t.app.mongo.db.collection('usages').find({ appId: new ObjectId(appId) }).toArray();
    return records.reduce((sum, record) => sum + (record.totalPoints as number), 0);
  }

  it("every turn on an API key is charged to it, and a limited key is refused once the burst's points pass its limit", async () => {
    const appId = await createPublishedApp(t, token, 'Exact key bot', simpleChatGraph);
    const key = await createApiKey(t, token, { name: 'exact key', appId });
    const answers = await spread(30, (app, index) => completion(app, apiKeyHeaders(key), { messages: [{ role: 'user', content: `hello ${index}` }] }));
    expect(answers.map((answer) => answer.statusCode)).toEqual(answers.map(() => 200));
    const recorded = await recordedPoints(appId);
    expect(recorded).toBeGreaterThan(0);
    const stored = await t.app.mongo.db.collection('openapis').findOne({ name: 'exact key' });
    expect(stored!.usagePoints).toBeCloseTo(recorded, 6);

    // A limit below the burst's cost (30 turns): started together, the turns all run (the limit is
    // judged at the start), and the points they spent refuse the next call.
    const limitedApp = await createPublishedApp(t, token, 'Limited key bot', simpleChatGraph);
    const limited = await createApiKey(t, token, { name: 'limited key', appId: limitedApp, limit: { maxUsagePoints: (recorded / 30) * 20 } });
    const burst = await spread(30, (app, index) => completion(app, apiKeyHeaders(limited), { messages: [{ role: 'user', content: `hello ${index}` }] }));
    expect(burst.every((answer) => answer.statusCode === 200 || answer.statusCode === 403)).toBe(true);
    const spent = await recordedPoints(limitedApp);
    expect((await t.app.mongo.db.collection('openapis').findOne({ name: 'limited key' }))!.usagePoints).toBeCloseTo(spent, 6);
    for (const app of [t, replica]) {
      const refused = await completion(app, apiKeyHeaders(limited), { messages: [{ role: 'user', content: 'one more' }] });
      expect(refused.statusCode, refused.body).toBe(403);
    }
  });

  it('every turn through a share link is charged to it, and a limited link is refused next', async () => {
    const appId = await createPublishedApp(t, token, 'Exact link bot', simpleChatGraph);
    const shareId = await ok(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'exact link', limit: { maxUsagePoints: -1, QPM: 1_000 } });
    const answers = await spread(30, (app, index) => completion(app, {}, { shareId, outLinkUid: `visitor-${index}`, messages: [{ role: 'user', content: `hello ${index}` }] }));
    expect(answers.map((answer) => answer.statusCode)).toEqual(answers.map(() => 200));
    const recorded = await recordedPoints(appId);
    expect(recorded).toBeGreaterThan(0);
    const links = t.app.mongo.db.collection('outlinks');
    expect((await links.findOne({ shareId }))!.usagePoints).toBeCloseTo(recorded, 6);

    const limitedApp = await createPublishedApp(t, token, 'Limited link bot', simpleChatGraph);
    const limited = await ok(t, token, 'POST', '/support/outLink/create', { appId: limitedApp, type: 'share', name: 'limited link', limit: { maxUsagePoints: (recorded / 30) * 20, QPM: 1_000 } });
    const burst = await spread(30, (app, index) => completion(app, {}, { shareId: limited, outLinkUid: `visitor-${index}`, messages: [{ role: 'user', content: `hello ${index}` }] }));
    expect(burst.every((answer) => answer.statusCode === 200 || answer.statusCode === 403)).toBe(true);
    expect((await links.findOne({ shareId: limited }))!.usagePoints).toBeCloseTo(await recordedPoints(limitedApp), 6);
    const refused = await completion(replica, {}, { shareId: limited, outLinkUid: 'visitor-late', messages: [{ role: 'user', content: 'one more' }] });
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json()).toMatchObject({ statusText: 'linkUnInvalid' });
  });
});

describe("a key's last-use time", () => {
  it("is no reason to refuse a request: with the key's lock held (a replica died holding it), the request is answered", async () => {
    const key = await createApiKey(t, token, { name: 'lock-held key' });
    const stored = await t.app.mongo.db.collection('openapis').findOne({ name: 'lock-held key' });
    // The lock of a charge whose replica died: held until it lapses, longer than a request waits.
    await t.app.mongo.db.collection('resource_tree_locks').insertOne({ _id: `openapis:key:${stored!._id.toHexString()}` as never, holder: 'a dead replica', expiresAt: new Date(Date.now() + 120_000) });
    const probe = await buildReplica(t, {}, whoamiProbe);
    try {
      const answered = await whoami(probe, apiKeyHeaders(key));
      expect(answered.statusCode, answered.body).toBe(200);
      // Its last-use time waits for the next minute's touch.
      expect((await t.app.mongo.db.collection('openapis').findOne({ _id: stored!._id }))?.lastUsedTime).toBeUndefined();
    } finally {
      await probe.close();
      await t.app.mongo.db.collection('resource_tree_locks').deleteOne({ _id: `openapis:key:${stored!._id.toHexString()}` as never });
    }
  }, 30_000);
});
