/**
 * A process's side of its links' places across the deployment (channel-places.repo.ts): a turn
 * takes one of its link's places before it starts and gives it back when it ends; a job finding
 * them all held is deferred (stored, its lease ended, the take not counted) and its link noted as
 * full everywhere, so sweeps leave its jobs out until a place of the link is given back here, or
 * the periodic sweep looks again (a stopped replica's places lapse; no one gives them back).
 */
import type { ChannelEventsRepo, ChannelJob } from './channel-events.repo.js';
import type { ChannelPlace, ChannelPlacesRepo } from './channel-places.repo.js';

export interface ChannelLinkPlacesDeps {
  repo: ChannelEventsRepo;
  places: ChannelPlacesRepo;
  now: () => number;
  log: { info(message: string): void; warn(message: string, error?: unknown): void };
  /** A job of a link may wait that a sweep could now run. */
  jobsMayWait: () => void;
}

export function createChannelLinkPlaces(deps: ChannelLinkPlacesDeps) {
  const { repo, places, log } = deps;
  /**
   * Links found with every place held (by any replica) since the last periodic sweep: sweeps leave
   * their jobs out, stored and lapsed; a place of theirs given back here sweeps.
   */
  const fullEverywhere = new Set<string>();

  return {
    /** One of the link's places across the deployment, or null when they are all held (or cannot be read). */
    async take(linkId: string): Promise<ChannelPlace | null> {
      return places.take(linkId, deps.now()).catch((error: unknown) => {
        log.warn(`messaging channel link ${linkId}: its places could not be taken; its message waits for a sweep`, error);
        return null;
      });
    },

    /** Keeps the place into the next epoch; false once another take holds it (this holder stalled an epoch). A failure counts as held: the next renewal tries again. */
    renew: async (place: ChannelPlace): Promise<boolean> => (await places.renew(place, deps.now()).catch(() => 'held')) === 'held',

    /**
     * Gives a place back, then looks for a job of its link waiting (deferred on any replica): a
     * sweep here runs it. A deferral looks at the places after its write (waitForPlace), this looks
     * at the jobs after giving back: one of the two sees the other.
     */
    async giveBack(place: ChannelPlace): Promise<void> {
      try {
        await places.giveBack(place);
        fullEverywhere.delete(place.linkId);
        if (await repo.hasLapsed(place.linkId, new Date(deps.now()))) deps.jobsMayWait();
      } catch (error) {
        log.warn(`messaging channel link ${place.linkId}: a place could not be given back; it lapses with its lease`, error);
      }
    },

    /** Defers a job whose link holds all its places (on every replica together); a place given back runs it. */
    async waitForPlace(job: ChannelJob, linkId: string): Promise<void> {
      const deferred = await repo.defer(job, new Date(deps.now() - 1)).catch((error: unknown) => {
        log.warn(`messaging channel message ${job.id} could not be deferred; a sweep runs it once its lease lapsed`, error);
        return false;
      });
      if (!deferred) return;
      log.info(`messaging channel message ${job.id} waits for a place of its link (its share is running across the deployment)`);
      fullEverywhere.add(linkId);
      // A place given back during the write found nothing waiting: look again, after it.
      if (await places.hasRoom(linkId, deps.now()).catch(() => false)) {
        fullEverywhere.delete(linkId);
        deps.jobsMayWait();
      }
    },

    /** Whether the link was found with every place held since the last periodic sweep. */
    isFullEverywhere: (linkId: string) => fullEverywhere.has(linkId),
    markFullEverywhere: (linkId: string) => void fullEverywhere.add(linkId),
    fullEverywhere: () => [...fullEverywhere],
    /** The periodic sweep looks at every link's places again. */
    forgetFull: () => fullEverywhere.clear(),
  };
}

export type ChannelLinkPlaces = ReturnType<typeof createChannelLinkPlaces>;
