/**
 * A fix of the MongoDB driver (7.9, the latest): a command written to a pooled connection whose
 * peer had just closed it (a database restart or failover, a proxy dropping connections) waited
 * for ever. Node has ended and destroyed such a socket: its `write` returns false without an
 * error, and the driver then waits for a `drain` that never comes; `socketTimeoutMS` cannot fire
 * on a destroyed socket. The request never answered, a background loop awaiting it stopped for
 * good, and the connection stayed checked out of the pool.
 *
 * Here a command on a closed connection fails at once with the network error the driver raises
 * for a failed write (its pool then discards the connection, and a retryable read or write is
 * tried again on a fresh one), and a write still waiting when the connection closes fails then.
 * Installed once, on the driver's connection class, before any client connects.
 */
import { createRequire } from 'node:module';
import { MongoNetworkError } from 'mongodb';

interface DriverConnection {
  closed: boolean;
  error: Error | null;
  id: number;
  address: string;
  socket: { destroyed: boolean };
  onError(error: Error): void;
  once(event: 'close', listener: () => void): void;
  off(event: 'close', listener: () => void): void;
  writeCommand(...args: unknown[]): Promise<void>;
}

const INSTALLED = Symbol.for('platform-service.mongo-closed-write');

function closedError(connection: DriverConnection): MongoNetworkError {
  return new MongoNetworkError(`connection ${connection.id} to ${connection.address} closed before the command was written`);
}

let checked = false;

export function installClosedWriteFix(): void {
  // Every client's creation calls this; the driver's class is looked up and patched only once.
  if (checked) return;
  checked = true;
  const require = createRequire(import.meta.url);
  const { Connection } = require('mongodb/lib/cmap/connection.js') as { Connection?: { prototype: DriverConnection & { [INSTALLED]?: true } } };
  const prototype = Connection?.prototype;
  // A driver without this class or method has another write path: nothing to mend here.
  if (!prototype || typeof prototype.writeCommand !== 'function' || prototype[INSTALLED]) return;
  const write = prototype.writeCommand;
  prototype.writeCommand = function writeCommand(this: DriverConnection, ...args: unknown[]): Promise<void> {
    if (this.closed || this.socket.destroyed) {
      const error = this.error instanceof MongoNetworkError ? this.error : closedError(this);
      this.onError(error);
      return Promise.reject(error);
    }
    return new Promise<void>((resolve, reject) => {
      const onClose = () => reject(this.error instanceof MongoNetworkError ? this.error : closedError(this));
      this.once('close', onClose);
      write.apply(this, args).then(
        () => {
          this.off('close', onClose);
          resolve();
        },
        (error: unknown) => {
          this.off('close', onClose);
          reject(error);
        },
      );
    });
  };
  prototype[INSTALLED] = true;
}
