import type { Clock } from "@cosmos-feed/core/clock";
import { abandonedBy, boundedRequest } from "./bounded-request.js";
import { releaseAs } from "./leases/mutations.js";
import { LeaseLostError, type LeaseStore } from "./leases/store.js";
import type { LeaseView } from "./leases/view.js";

export interface LeftoverReleaseOptions {
  store: Pick<LeaseStore, "update">;
  view: LeaseView;
  me: string;
  clock: Clock;
  /** Wait between attempts after a failed release (ms). */
  retryInterval: number;
  /** Give up after this long (ms): by then the lease has expired and any host may take it anyway. */
  giveUpAfter: number;
  /** Longest wait for one release's answer (ms); see ChangeFeedDefaults.requestTimeout. */
  requestTimeout: number;
  released: (leaseToken: string) => void;
  report: (error: unknown, leaseToken: string) => void;
  /** Stops retrying and ends a release in flight (abandon() during a stop). */
  signal: AbortSignal;
}

/**
 * The last step of stop(), once every worker has ended: releases each lease the view still shows as this
 * host's. Without it a lease stays owned after stop() whenever its supervisor was not among the ones released:
 * one that closed on its local deadline (a renewal slower than expiration − margin, as on a loaded machine)
 * while the document still names this host, or one whose release failed (503, timeout). Costs no request when
 * every release succeeded (the view holds this host's own writes). A release that fails for another reason
 * than loss is retried until the lease would have expired; a LeaseLostError means it is not ours (done). Each
 * release is bounded by requestTimeout (a hung one is retried like a failed one); one given up by `signal`
 * ends the retries without an error report.
 */
export async function releaseLeftovers(o: LeftoverReleaseOptions): Promise<void> {
  const leftovers = o.view.leases().filter((l) => l.owner === o.me);
  await Promise.all(
    leftovers.map(async (lease) => {
      const giveUpAt = o.clock.monotonicNow() + o.giveUpAfter;
      for (;;) {
        try {
          const released = await boundedRequest(o.clock, o.requestTimeout, o.signal, "lease release", (s) =>
            o.store.update(lease, releaseAs(o.me), s),
          );
          o.view.apply(released);
          o.released(lease.leaseToken);
          return;
        } catch (e) {
          if (e instanceof LeaseLostError) return;
          if (abandonedBy(o.signal, e)) return;
          o.report(e, lease.leaseToken);
          if (o.signal.aborted || o.clock.monotonicNow() + o.retryInterval >= giveUpAt) return;
          await o.clock.sleep(o.retryInterval, o.signal);
        }
      }
    }),
  );
}
