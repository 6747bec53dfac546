/**
 * A link's places: the channel turns of one link the whole deployment runs at once (its share,
 * CHANNEL_TURNS_PER_LINK), so N replicas do not let one link run N times its share. Time is cut
 * into epochs (half a turn's lease); place n of a link in epoch e is the document
 * `<linkId>:<n>:<e>`, only ever inserted, so its unique `_id` lets one holder have it (on MongoDB
 * and FerretDB alike, which runs a conditional update or delete as a read, then a write by `_id`,
 * and could hand a lapsed place to two takers). A take inserts the place for this epoch and the
 * next; the holder's renewal inserts each following epoch's before it starts; a holder that
 * stopped (a crash, a close that stopped waiting) renews nothing, and its place is free again
 * once the epochs it holds ended: within a lease. A turn that ends deletes its own documents.
 * Every replica must use the same CHANNEL_TURN_LEASE_MS and CHANNEL_TURNS_PER_LINK.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { type IndexDeclaration, isDuplicateKeyError } from '../../../infra/mongo.js';

export const CHANNEL_PLACES = 'outlink_channel_places';
export const CHANNEL_PLACE_INDEXES: IndexDeclaration[] = [
  // A take's read: the places of a link in two epochs.
  { collection: CHANNEL_PLACES, key: { linkId: 1, epoch: 1 }, options: { name: 'linkId_epoch' } },
  { collection: CHANNEL_PLACES, key: { until: 1 }, options: { name: 'until' } },
];

interface ChannelPlaceDoc {
  /** `<linkId>:<place>:<epoch>`. */
  _id: string;
  linkId: string;
  place: number;
  epoch: number;
  /** The take holding it (a random id per take). */
  holder: string;
  /** The end of its epoch: the cleanup removes it a while after. */
  until: Date;
}

/** A place of a link one turn holds, and the epochs it holds it for. */
export interface ChannelPlace {
  linkId: string;
  place: number;
  holder: string;
  epochs: number[];
  /** Given back: a renewal inserts nothing more for it. */
  givenBack: boolean;
}

export function createChannelPlacesRepo(db: Db, options: { share: number; epochMs: number }) {
  const places = db.collection<ChannelPlaceDoc>(CHANNEL_PLACES);
  const { share, epochMs } = options;
  const epochOf = (nowMs: number) => Math.floor(nowMs / epochMs);
  const placeDoc = (linkId: string, place: number, epoch: number, holder: string): ChannelPlaceDoc => ({
    _id: `${linkId}:${place}:${epoch}`,
    linkId,
    place,
    epoch,
    holder,
    until: new Date((epoch + 1) * epochMs),
  });
  /** The places of the link held in this epoch or the next. */
  const heldPlaces = async (linkId: string, nowMs: number): Promise<Set<number>> => {
    const epoch = epochOf(nowMs);
    const docs = await places.find({ linkId, epoch: { $in: [epoch, epoch + 1] } }, { projection: { place: 1 } }).toArray();
    return new Set(docs.map((doc) => doc.place));
  };

  return {
    /**
     * Takes a free place of the link, or null when all its share is held: one read, then one
     * insert (of this epoch's and the next's document); another try per place lost to a taker
     * racing for it.
     */
    async take(linkId: string, nowMs: number): Promise<ChannelPlace | null> {
      const held = await heldPlaces(linkId, nowMs);
      const epoch = epochOf(nowMs);
      const holder = randomUUID();
      for (let place = 0; place < share; place++) {
        if (held.has(place)) continue;
        try {
          await places.insertMany([placeDoc(linkId, place, epoch, holder), placeDoc(linkId, place, epoch + 1, holder)], { ordered: true });
          return { linkId, place, holder, epochs: [epoch, epoch + 1], givenBack: false };
        } catch (error) {
          // Half of it may have landed (the next epoch's was taken, or the answer was lost): none of it is kept.
          await places.deleteMany({ linkId, holder }).catch(() => undefined);
          if (!isDuplicateKeyError(error)) throw error;
        }
      }
      return null;
    },

    /**
     * Keeps the place into the next epoch (an insert once per epoch, none otherwise); 'lost' once
     * another take holds it (this holder renewed nothing for a whole epoch), or once it was given
     * back. A failure is thrown, and the next renewal tries again.
     */
    async renew(held: ChannelPlace, nowMs: number): Promise<'held' | 'lost'> {
      const epoch = epochOf(nowMs);
      held.epochs = held.epochs.filter((e) => e >= epoch);
      for (const next of [epoch, epoch + 1]) {
        if (held.givenBack) return 'lost';
        if (held.epochs.includes(next)) continue;
        const doc = placeDoc(held.linkId, held.place, next, held.holder);
        try {
          await places.insertOne(doc);
        } catch (error) {
          if (!isDuplicateKeyError(error)) throw error;
          // An earlier insert whose answer was lost may have landed: whose is it?
          if ((await places.findOne({ _id: doc._id }, { projection: { holder: 1 } }))?.holder !== held.holder) return 'lost';
        } finally {
          // Given back while the insert was on its way: its delete may have come first.
          if (held.givenBack) await places.deleteOne({ _id: doc._id, holder: held.holder });
        }
        held.epochs.push(next);
      }
      return held.givenBack ? 'lost' : 'held';
    },

    /**
     * Gives the place back (its documents of every epoch); a renewal then inserts none, or removes
     * its own. The turn already waits for its renewal before giving back (infra/lease-renewal.ts);
     * this holds for any other caller of the repository too.
     */
    async giveBack(held: ChannelPlace): Promise<void> {
      held.givenBack = true;
      await places.deleteMany({ linkId: held.linkId, holder: held.holder });
    },

    /** Whether a place of the link is free now. */
    hasRoom: async (linkId: string, nowMs: number): Promise<boolean> => (await heldPlaces(linkId, nowMs)).size < share,

    /** Removes the documents of epochs that ended a lease ago (a stopped holder's). */
    async deleteExpired(nowMs: number): Promise<number> {
      return (await places.deleteMany({ until: { $lt: new Date(nowMs - 2 * epochMs) } })).deletedCount;
    },
  };
}

export type ChannelPlacesRepo = ReturnType<typeof createChannelPlacesRepo>;
