import type { Db } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';

/**
 * Client addresses each account logged in from recently. An account's failed-login limit is
 * anyone's to fill (ten wrong passwords under its name, from anywhere), so it would lock its owner
 * out; an address the owner logged in from in the last 30 days still passes that limit, held only
 * by its own per-address limit (docs/decisions.md#login-attempts).
 */
interface LoginAddressDoc {
  /** JSON of [user name, address]: neither part can forge the other's boundary. */
  _id: string;
  /** 30 days after the last successful login from the address. */
  expiresAt: Date;
}

const COLLECTION = 'login_addresses';
const LOGIN_ADDRESS_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export const LOGIN_ADDRESS_INDEXES: IndexDeclaration[] = [{ collection: COLLECTION, key: { expiresAt: 1 }, options: { name: 'expires' } }];

export function createLoginAddressesRepo(db: Db) {
  const addresses = db.collection<LoginAddressDoc>(COLLECTION);
  const idOf = (username: string, ip: string) => JSON.stringify([username, ip]);
  return {
    async remember(username: string, ip: string, now: number): Promise<void> {
      await addresses.updateOne({ _id: idOf(username, ip) }, { $set: { expiresAt: new Date(now + LOGIN_ADDRESS_TTL_MS) } }, { upsert: true });
    },
    async isKnown(username: string, ip: string, now: number): Promise<boolean> {
      return (await addresses.countDocuments({ _id: idOf(username, ip), expiresAt: { $gt: new Date(now) } }, { limit: 1 })) > 0;
    },
    /** No TTL index on FerretDB 1.24: a periodic task removes what expired. */
    async deleteExpired(now: number): Promise<number> {
      return (await addresses.deleteMany({ expiresAt: { $lte: new Date(now) } })).deletedCount;
    },
  };
}

export type LoginAddressesRepo = ReturnType<typeof createLoginAddressesRepo>;
