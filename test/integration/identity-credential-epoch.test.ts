import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERSION_STAMPS_COLLECTION } from '../../src/infra/version-stamps.js';
import { CREDENTIALS_RESYNC_MS, createCredentialEpoch, isCredentialEpochKey, REVOCATION_LINK_RETENTION_MS } from '../../src/platform/identity/credential-epoch.js';
import { CREDENTIALS_STAMP, revocationLinkKey } from '../../src/platform/identity/revocation-links.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login, whoamiProbe } from '../helpers/platform.js';

/**
 * The credential epoch as a chain of revocation links: exact across processes (each revocation
 * is a link of its own, even when many race), and naming what it revoked, so that one user's
 * logout or time zone change does not empty everybody's cached credentials.
 */
let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({}, whoamiProbe);
});

afterAll(async () => {
  await t.close();
});

const db = () => t.app.mongo.db;
/** A process of its own on the test database, with manual clocks: monotonic (`at`) and the wall clock's offset (`wall`). */
function processOn(leaseMs = 50) {
  const clock = { at: 0, wall: 0 };
  return { clock, epoch: createCredentialEpoch(db(), { leaseMs, monotonic: () => clock.at, now: () => Date.now() + clock.wall }) };
}
const deleteLink = (seq: number) => db().collection(VERSION_STAMPS_COLLECTION).deleteOne({ _id: revocationLinkKey(seq) } as never);

describe('credential epoch chain', () => {
  it('every one of many racing revocations from several processes is a link of its own, and a reader finds all their subjects', async () => {
    const reader = processOn();
    const start = await reader.epoch.current();
    const writers = [processOn(0), processOn(0), processOn(0)];
    const subjects = Array.from({ length: 24 }, (_, index) => `user:racer-${index}`);
    await Promise.all(subjects.map((subject, index) => (writers[index % writers.length] as ReturnType<typeof processOn>).epoch.revoked([subject])));
    reader.clock.at += 1_000;
    const end = await reader.epoch.current();
    expect(Number(end) - Number(start)).toBe(subjects.length);
    const revoked = await reader.epoch.revokedBetween(start, end);
    expect([...(revoked ?? [])].sort()).toEqual([...subjects].sort());
  });

  it('a revocation naming nothing revokes everything; a span reaching a pruned or unknown link is not known', async () => {
    const writer = processOn(0);
    const before = await writer.epoch.current();
    await writer.epoch.revoked();
    const after = await writer.epoch.current();
    expect(await writer.epoch.revokedBetween(before, after)).toBeNull();
    expect(await writer.epoch.revokedBetween(after, before)).toBeNull();
    expect(await writer.epoch.revokedBetween(after, after)).toEqual(new Set());
    // A fresh process cannot read a link that is gone.
    await writer.epoch.revoked(['user:gone']);
    const last = await writer.epoch.current();
    await db().collection(VERSION_STAMPS_COLLECTION).deleteOne({ _id: revocationLinkKey(Number(last)) } as never);
    expect(await processOn().epoch.revokedBetween(after, last)).toBeNull();
  });

  it('inside its lease a process reads nothing; past it, one read of the next link', async () => {
    const reader = processOn(100);
    await reader.epoch.current();
    reader.clock.at += 10;
    const inside = await commandsDuring(t.app, () => reader.epoch.current());
    expect(inside).toEqual([]);
    reader.clock.at += 200;
    const past = await commandsDuring(t.app, () => reader.epoch.current());
    expect(past.map((command) => command.key)).toEqual([revocationLinkKey(Number(await reader.epoch.current()) + 1)]);
  });

  it('a process that has not looked for a while starts again from the highest link stored, as links past its end may be pruned', async () => {
    const idle = processOn();
    const seen = await idle.epoch.current();
    const writer = processOn(0);
    for (let index = 0; index < 3; index++) await writer.epoch.revoked([`user:while-idle-${index}`]);
    const end = await writer.epoch.current();
    // Pruned from the lowest places up to all but the last: its own end and the links it missed are gone.
    for (let seq = 1; seq < Number(end); seq++) await deleteLink(seq);
    idle.clock.at += CREDENTIALS_RESYNC_MS + 1;
    const found = await idle.epoch.current();
    expect(found).toBe(end);
    // What it missed is unknown: its caches drop everything.
    expect(await idle.epoch.revokedBetween(seen, found)).toBeNull();
  });

  it('a process back after a while checks its own end by id (no sort of the links, no batch read): only the epoch keys are read', async () => {
    const back = processOn();
    const writer = processOn(0);
    await writer.epoch.revoked(['user:before-a-while']);
    const seen = await back.epoch.current();
    await writer.epoch.revoked(['user:meanwhile']);
    back.clock.at += CREDENTIALS_RESYNC_MS + 1;
    let moved: ReadonlySet<string> | null = null;
    const commands = await commandsDuring(t.app, async () => {
      const now = await back.epoch.current();
      moved = await back.epoch.revokedBetween(seen, now);
    });
    expect(moved).toEqual(new Set(['user:meanwhile']));
    expect(commands.length).toBeGreaterThan(0);
    expect(commands.filter((command) => !isCredentialEpochKey(command.key))).toEqual([]);
  });

  it('a host suspended and resumed (its monotonic clock stood still, the wall clock ran) starts again too', async () => {
    const sleeper = processOn();
    const seen = await sleeper.epoch.current();
    const writer = processOn(0);
    for (let index = 0; index < 2; index++) await writer.epoch.revoked([`user:while-asleep-${index}`]);
    const end = await writer.epoch.current();
    for (let seq = 1; seq <= Number(seen) + 1; seq++) await deleteLink(seq);
    sleeper.clock.at += 200;
    sleeper.clock.wall += CREDENTIALS_RESYNC_MS + 1;
    expect(await sleeper.epoch.current()).toBe(end);
  });

  it("a previous version's stamp (a random value) does not make a starting process begin the chain again", async () => {
    const writer = processOn(0);
    await writer.epoch.revoked(['user:before-upgrade']);
    const end = Number(await writer.epoch.current());
    await db().collection(VERSION_STAMPS_COLLECTION).replaceOne({ _id: CREDENTIALS_STAMP } as never, { value: 'a0b1c2d3-uuid-of-an-old-replica', at: new Date() }, { upsert: true });
    const starting = processOn(0);
    expect(Number(await starting.epoch.current())).toBe(end);
    await starting.epoch.revoked(['user:after-upgrade']);
    const watcher = processOn();
    expect(Number(await watcher.epoch.current())).toBe(end + 1);
    expect(await writer.epoch.revokedBetween(String(end), String(end + 1))).toEqual(new Set(['user:after-upgrade']));
  });

  it('pruning keeps recent links and the last 64 stored', async () => {
    const writer = processOn(0);
    for (let index = 0; index < 70; index++) await writer.epoch.revoked([`user:prune-${index}`]);
    const end = Number(await writer.epoch.current());
    const links = db().collection<{ _id: string; seq?: number }>(VERSION_STAMPS_COLLECTION);
    expect(await writer.epoch.prune(new Date())).toBe(0);
    const later = new Date(Date.now() + REVOCATION_LINK_RETENTION_MS + 60_000);
    const pruned = await writer.epoch.prune(later);
    expect(pruned).toBeGreaterThan(0);
    const left = (await links.find({ seq: { $gte: 1 } }).toArray()).map((doc) => doc.seq as number);
    expect(Math.min(...left)).toBe(end - 64);
    expect(await links.findOne({ _id: CREDENTIALS_STAMP })).toMatchObject({ value: String(end) });
    // The reader still walks forward from the end it knows.
    await writer.epoch.revoked(['user:after-prune']);
    expect(Number(await writer.epoch.current())).toBe(end + 1);
  });
});

describe('one user revoking their own credentials', () => {
  const identityCommands = async (run: () => Promise<unknown>) =>
    (await commandsDuring(t.app, run)).filter((command) => ['user_sessions', 'users', 'team_members', 'openapis'].includes(command.collection));

  it("a logout or a time zone change does not make another user's cached session or key resolve again", async () => {
    await createUser(t, { username: 'epoch-bystander', password: 'epoch-pass-1' });
    await createUser(t, { username: 'epoch-looper', password: 'epoch-pass-2' });
    const bystander = await login(t, 'epoch-bystander', 'epoch-pass-1');
    const bystanderKey = await createApiKey(t, bystander, { name: 'bystander key' });
    const whoami = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/api/test/whoami', headers });
    for (const headers of [authHeaders(bystander), apiKeyHeaders(bystanderKey)]) expect((await whoami(headers)).statusCode).toBe(200);
    /** The bystander's session and key answer from this process's cache: no identity read. */
    const bystanderStillCached = async () => {
      for (const headers of [authHeaders(bystander), apiKeyHeaders(bystanderKey)]) {
        let status = 0;
        const commands = await identityCommands(async () => {
          status = (await whoami(headers)).statusCode;
        });
        expect(status).toBe(200);
        expect(commands).toEqual([]);
      }
    };

    const looper = await login(t, 'epoch-looper', 'epoch-pass-2');
    expect((await t.app.inject({ method: 'PUT', url: '/api/support/user/account/update', headers: authHeaders(looper), payload: { timezone: 'Europe/Paris' } })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'POST', url: '/api/support/user/account/loginout', headers: authHeaders(looper) })).statusCode).toBe(200);

    await bystanderStillCached();
    // The looper's own session is refused at once.
    expect((await whoami(authHeaders(looper))).statusCode).toBe(401);

    // A key's delete names the key: the other user's cached key and session stay, the deleted key is refused.
    const again = await login(t, 'epoch-looper', 'epoch-pass-2');
    const looperKey = await createApiKey(t, again, { name: 'looper key' });
    expect((await whoami(apiKeyHeaders(looperKey))).statusCode).toBe(200);
    const keys = (await t.app.inject({ method: 'GET', url: '/api/support/openapi/list', headers: authHeaders(again) })).json().data as { _id: string; name: string }[];
    const keyId = keys.find((key) => key.name === 'looper key')?._id;
    expect((await t.app.inject({ method: 'DELETE', url: `/api/support/openapi/delete?id=${keyId}`, headers: authHeaders(again) })).statusCode).toBe(200);
    await bystanderStillCached();
    expect((await whoami(apiKeyHeaders(looperKey))).statusCode).toBe(401);
  });
});
