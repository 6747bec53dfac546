import { raceAbort } from '../../../infra/abort-race.js';

/**
 * A node's outgoing calls (HTTP and Laf requests, the code sandbox, readFiles downloads, system
 * plugins, dataset searches) end with their turn: once its client hung up (the turn's abort
 * signal), the node goes on at once with a CallCut, as a model call is cut (llm-stream.ts cutBy),
 * and the turn ends and is saved with what ran. The call is handed the signal too, so one that can
 * be cut (an outbound request: its connection is closed) is; one that cannot goes on unheard.
 */

/** What a node records of a call its turn's hang-up cut. */
export const CUT_MESSAGE = 'The call was cut: the client hung up';

/** A call cut by the turn's abort: named as axios names a cancelled request (`error` outputs read it so). */
export class CallCut extends Error {
  override name = 'CanceledError';
  readonly code = 'ERR_CANCELED';

  constructor() {
    super(CUT_MESSAGE);
  }
}

/**
 * `call(signal)` until `signal` aborts: then a CallCut, at once (a failure of the call after the
 * abort is a CallCut too). Without a signal (a run no client waits on) the call as it is.
 */
export function untilCut<T>(signal: AbortSignal | undefined, call: (signal?: AbortSignal) => Promise<T>): Promise<T> {
  return raceAbort(signal, call, () => new CallCut());
}
