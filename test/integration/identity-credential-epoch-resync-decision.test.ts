import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandStartedEvent } from 'mongodb';
import { createMongo, type Mongo } from '../../src/infra/mongo.js';
import { VERSION_STAMPS_COLLECTION } from '../../src/infra/version-stamps.js';
import { CREDENTIALS_RESYNC_MS, createCredentialEpoch } from '../../src/platform/identity/credential-epoch.js';
import { revocationLinkKey } from '../../src/platform/identity/revocation-links.repo.js';
import { freshDatabaseUri } from '../helpers/app.js';

/**
 * Whether a process looked at the credential chain lately decides both where a check walks from
 * and whether what it finds replaces the end it knew. Taken twice, a wall clock reaching the 30 s
 * mark between the two could make a check start again from the highest link stored (its end was
 * pruned) and still answer the end it knew.
 */
let mongo: Mongo;

beforeAll(async () => {
  mongo = createMongo(freshDatabaseUri());
  await mongo.client.connect();
});

afterAll(async () => {
  await mongo.db.dropDatabase();
  await mongo.client.close();
});

const links = () => mongo.db.collection<{ _id: string; seq?: number }>(VERSION_STAMPS_COLLECTION);

async function highestStored(): Promise<number> {
  const doc = await links().find({ seq: { $gte: 1 } }).sort({ seq: -1 }).limit(1).next();
  return doc?.seq ?? 0;
}

/** Whether `run` sent the sort that finds the highest link stored (how a process starts again). */
async function sortsDuring(run: () => Promise<unknown>): Promise<boolean> {
  let sorted = false;
  const listener = (event: CommandStartedEvent) => {
    if (event.commandName === 'find' && event.command.find === VERSION_STAMPS_COLLECTION && event.command.sort) sorted = true;
  };
  mongo.client.on('commandStarted', listener);
  try {
    await run();
  } finally {
    mongo.client.off('commandStarted', listener);
  }
  return sorted;
}

describe('a credential epoch check decides once whether it looked lately', () => {
  it('around the 30 s mark on a wall clock that moves at every reading, a check that starts again answers the highest link stored, else its own end', async () => {
    const writer = createCredentialEpoch(mongo.db, { leaseMs: 0 });
    const outcomes = new Set<string>();
    for (let offset = CREDENTIALS_RESYNC_MS - 4; offset <= CREDENTIALS_RESYNC_MS + 4; offset++) {
      // Two links, so that one stays below the end pruned.
      for (const subject of ['below', 'end']) await writer.revoked([`user:${subject}-${offset}`]);
      const wall = { at: 1_000_000, ticking: false };
      let monotonic = 0;
      const reader = createCredentialEpoch(mongo.db, { leaseMs: 50, monotonic: () => monotonic, now: () => (wall.ticking ? wall.at++ : wall.at) });
      const end = Number(await reader.current());
      // Its end pruned (by hand here): a process starting again finds the link below it.
      await links().deleteOne({ _id: revocationLinkKey(end) });
      monotonic += 200;
      wall.at = 1_000_000 + offset;
      wall.ticking = true;
      let answer = '';
      const startedAgain = await sortsDuring(async () => {
        answer = await reader.current();
      });
      wall.ticking = false;
      expect({ offset, answer: Number(answer) }).toEqual({ offset, answer: startedAgain ? await highestStored() : end });
      outcomes.add(startedAgain ? 'started again' : 'walked on');
    }
    // The offsets cover both sides of the mark.
    expect([...outcomes].sort()).toEqual(['started again', 'walked on']);
  });
});
