import type { Clock } from "@cosmos-feed/core/clock";
import { LeaseLostError } from "./leases/store.js";
import { renewDue } from "./options.js";

export interface LeaseRenewerOptions {
  leaseToken: string;
  clock: Clock;
  /** Retry interval of a failed renewal, and the shortest renewal age (ms). */
  renewInterval: number;
  /** Other hosts may take the lease once it has not been written for this long (ms). */
  expirationInterval: number;
  /** The local deadline comes this long before the lease expires for others (ms). */
  safetyMargin: number;
  /** Rewrites the lease (queued with its checkpoints); throws LeaseLostError when it is no longer ours. */
  renew: () => Promise<void>;
  /** Monotonic time at which the last successful write of the lease (renewal, checkpoint, acquire) was sent. */
  lastWriteSentAt: () => number;
  /** A renewal failed for another reason (503, timeout): reported, retried until the deadline. */
  onRenewFailed: (error: unknown) => void;
}

/** Why a renewer ended: the processor stopped it, the lease is someone else's, or the local deadline passed. */
export type RenewerExit = { kind: "stopped" } | { kind: "lost"; error: LeaseLostError } | { kind: "expired" };

/**
 * Keeps one lease alive: rewrites it once it is {@link renewDue} old, and watches the local deadline
 * (client-go's renew deadline): when no write of the lease has succeeded for
 * (expiration − safety margin) by this host's monotonic clock, the lease is given up here before any other host
 * may take it, even while a renewal is still hanging. One renewer per lease, so a slow write delays only its own
 * lease.
 */
export class LeaseRenewer {
  constructor(private readonly o: LeaseRenewerOptions) {}

  /** Runs until `signal` fires (→ stopped), the lease is lost, or the deadline passes. */
  async run(signal: AbortSignal): Promise<RenewerExit> {
    const inner = new AbortController();
    const stop = () => inner.abort();
    signal.addEventListener("abort", stop, { once: true });
    try {
      return await Promise.race([this.renewLoop(inner.signal), this.deadlineWatch(inner.signal)]);
    } finally {
      signal.removeEventListener("abort", stop);
      inner.abort();
    }
  }

  /** Monotonic time after which this host must not act on the lease any more. */
  deadline(): number {
    return this.o.lastWriteSentAt() + this.o.expirationInterval - this.o.safetyMargin;
  }

  private async renewLoop(signal: AbortSignal): Promise<RenewerExit> {
    const { clock } = this.o;
    const age = renewDue(this.o.renewInterval, this.o.expirationInterval);
    let retryAt: number | undefined;
    while (!signal.aborted) {
      const dueAt = Math.max(this.o.lastWriteSentAt() + age, retryAt ?? 0);
      const wait = dueAt - clock.monotonicNow();
      if (wait > 0) {
        await clock.sleep(wait, signal);
        // A checkpoint written meanwhile moved the due time: look again.
        continue;
      }
      if (signal.aborted) break;
      try {
        await this.o.renew();
        retryAt = undefined;
      } catch (e) {
        if (e instanceof LeaseLostError) return { kind: "lost", error: e };
        if (signal.aborted) break;
        this.o.onRenewFailed(e);
        retryAt = clock.monotonicNow() + this.o.renewInterval;
      }
    }
    return { kind: "stopped" };
  }

  private async deadlineWatch(signal: AbortSignal): Promise<RenewerExit> {
    const { clock } = this.o;
    while (!signal.aborted) {
      const left = this.deadline() - clock.monotonicNow();
      if (left <= 0) return { kind: "expired" };
      await clock.sleep(left, signal);
    }
    return { kind: "stopped" };
  }
}
