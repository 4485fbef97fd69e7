import type { Container } from "@azure/cosmos";
import { EqualPartitionsBalancingStrategy } from "../../packages/changefeed/src/balancing/strategy.js";
import { type Lease, LeaseMode, newLease } from "../../packages/changefeed/src/leases/lease.js";
import {
  LoadBalancer,
  type LoadBalancerOptions,
  type RunningLease,
} from "../../packages/changefeed/src/load-balancer.js";

/** Where a promise stands, without awaiting it. */
export function track<T>(p: Promise<T>) {
  const s: { value?: T; error?: unknown; settled: boolean } = { settled: false };
  p.then(
    (v) => Object.assign(s, { value: v, settled: true }),
    (e: unknown) => Object.assign(s, { error: e, settled: true }),
  );
  return s;
}

/** A latest-version lease of container "id" in prefix "p" for range `token` (the whole key space). */
export const lease = (token: string, owner: string | null, continuation: string | null = '"5"'): Lease => ({
  ...newLease("p", "id", { id: token, min: "", max: "FF" }, continuation, LeaseMode.LatestVersion),
  owner,
});
export const lease0 = (owner: string | null = null, continuation: string | null = null): Lease =>
  lease("0", owner, continuation);

/**
 * A load balancer running no lease of its own, with equal-partitions balancing (60 s lease expiry), nothing
 * excluded, no-op take-over and stolen callbacks; by default a stand-in monitored container, errors dropped and a
 * signal that never fires.
 */
export function testBalancer(
  o: Pick<LoadBalancerOptions, "options" | "store" | "view" | "clock"> &
    Partial<Pick<LoadBalancerOptions, "monitored" | "report" | "signal">>,
): LoadBalancer {
  return new LoadBalancer({
    strategy: new EqualPartitionsBalancingStrategy(60_000, () => 0),
    monitored: {} as Container,
    running: new Map(),
    takeOver: () => {},
    stolen: () => {},
    excluded: new Set(),
    report: () => {},
    signal: new AbortController().signal,
    ...o,
  });
}

/**
 * A load balancer over a fake store that runs what it takes (`taken`, in order, and `running`) and stops what is
 * stolen from it (`stolen`); a reported error is thrown; nothing excluded, a signal that never fires.
 */
export function recordingBalancer(
  me: string,
  o: Pick<LoadBalancerOptions, "options" | "strategy" | "store" | "view" | "clock">,
) {
  const running = new Map<string, RunningLease>();
  const taken: string[] = [];
  const stolen: string[] = [];
  const balancer = new LoadBalancer({
    monitored: {} as Container,
    running,
    takeOver: (l) => {
      taken.push(l.leaseToken);
      running.set(l.leaseToken, { expectedOwner: me });
    },
    stolen: (token) => {
      stolen.push(token);
      running.delete(token);
    },
    excluded: new Set(),
    report: (e) => {
      throw e;
    },
    signal: new AbortController().signal,
    ...o,
  });
  return { balancer, running, taken, stolen };
}
