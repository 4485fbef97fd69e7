import type { Clock } from "@cosmos-feed/core/clock";
import { abandonedBy, boundedRequest } from "../bounded-request.js";
import type { LeaseStore } from "../leases/store.js";

export interface FleetSignalOptions {
  store: LeaseStore;
  clock: Clock;
  /** This host's name (written into the signal, for whoever reads the container by hand). */
  me: string;
  requestTimeout: number;
  /** Ends the signal's requests when the processor stops. */
  signal: AbortSignal;
  report: (error: unknown) => void;
}

/**
 * The fleet signal: one small document, `<prefix>.fleet`, that a host rewrites when the leases' ownership changed
 * in a way the others must act on soon (it took leases, found leases expired, replaced a split lease, released its
 * leases on stop). Every host reads it once per balancing round (a point read) and refreshes its lease view only
 * when its ETag moved; otherwise the view is refreshed in the host's own watch slot alone. So the lease feed is
 * read about once per watch slot in total however many hosts there are (each read brings each changed lease once:
 * cost linear in leases), while an event still reaches every host within one balancing round.
 *
 * A lost or failed signal costs latency, never safety: every decision is still checked by the lease's ETag, and the
 * host reads the whole feed in its own slot anyway.
 */
export class FleetSignal {
  /** The ETag last read or written; null before the first look. */
  private seen: string | undefined | null = null;

  constructor(private readonly o: FleetSignalOptions) {}

  /**
   * Reads the signal. True when it moved since this host's last look or raise (or the read failed: a refresh is
   * then the safe side); the first look only records it.
   */
  async look(): Promise<boolean> {
    const { store, clock, requestTimeout, signal } = this.o;
    try {
      const etag = await boundedRequest(clock, requestTimeout, signal, "fleet signal read", (s) =>
        store.readFleetSignal(s),
      );
      const moved = this.seen !== null && etag !== this.seen;
      this.seen = etag;
      return moved;
    } catch (e) {
      if (abandonedBy(signal, e)) return false;
      return true;
    }
  }

  /** Rewrites the signal so every other host refreshes its view at its next round. Never throws. */
  async raise(signal: AbortSignal = this.o.signal): Promise<void> {
    const { store, clock, requestTimeout, me } = this.o;
    try {
      const etag = await boundedRequest(clock, requestTimeout, signal, "fleet signal write", (s) =>
        store.bumpFleetSignal(me, s),
      );
      if (etag !== undefined) this.seen = etag;
    } catch (e) {
      if (!abandonedBy(signal, e)) this.o.report(e);
    }
  }
}
