/**
 * The fleet settles: a property test over seeded schedules of hosts joining, leaving (releasing or crashing)
 * and pausing, on a fake clock and the in-memory lease store, with the real LoadBalancer, LeaseView,
 * equal-partitions strategy and lease mutations. Each host renews its leases every renew interval, stops
 * believing it owns a lease at its local deadline (last write sent + expiration − margin), and runs a
 * balancing round every acquire interval (its own phase). Asserted on every step: a host the store no longer
 * names as a lease's owner (it was stolen, or taken after expiry) stops believing it owns it within one renew
 * interval of running (not paused). Asserted after the schedule: once the last event (a join, a leave, the end of a pause) is
 * SETTLE_BOUND old, no lease changes owner any more, every lease is owned by a live host and the counts differ
 * by at most one.
 */
import type { Container } from "@azure/cosmos";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EqualPartitionsBalancingStrategy } from "../../packages/changefeed/src/balancing/strategy.js";
import { LeaseMode, newLease } from "../../packages/changefeed/src/leases/lease.js";
import { releaseAs, renewAs } from "../../packages/changefeed/src/leases/mutations.js";
import { LeaseLostError } from "../../packages/changefeed/src/leases/store.js";
import { LeaseView } from "../../packages/changefeed/src/leases/view.js";
import { LoadBalancer, type RunningLease } from "../../packages/changefeed/src/load-balancer.js";
import { resolveOptions } from "../../packages/changefeed/src/options.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { InMemoryLeaseStoreFake } from "../support/in-memory-lease-store.js";

const RENEW = 1_000;
const ACQUIRE = 2_000;
const EXPIRATION = 6_000;
const MARGIN = 500;
const STEP = 250;
const MAX_LEASES = 8;
/**
 * The bound, stated: a crashed or paused host's leases become available EXPIRATION after its last write;
 * from then each balancing round either takes available leases up to the target or steals at most one, so
 * MAX_LEASES + 2 rounds more are enough.
 */
const SETTLE_BOUND = EXPIRATION + (MAX_LEASES + 2) * ACQUIRE;
/** How long the settled fleet is watched for a move. */
const OBSERVE = 10 * ACQUIRE;

type Event =
  | { at: number; kind: "join" }
  | { at: number; kind: "leave" | "crash"; host: number }
  | { at: number; kind: "pause"; host: number; forMs: number };

interface Host {
  name: string;
  view: LeaseView;
  balancer: LoadBalancer;
  /** Token → monotonic time the last successful write of it was sent. */
  running: Map<string, RunningLease & { lastWriteAt: number }>;
  phase: number;
  alive: boolean;
  pausedUntil: number;
}

async function startHost(name: string, phase: number, clock: FakeClock, store: InMemoryLeaseStoreFake) {
  const view = new LeaseView(store.asStore());
  await view.load();
  const running: Host["running"] = new Map();
  const options = resolveOptions(
    {
      monitoredContainer: {} as Container,
      leaseContainer: {} as Container,
      instanceName: name,
      leaseRenewInterval: RENEW,
      leaseAcquireInterval: ACQUIRE,
      leaseExpirationInterval: EXPIRATION,
      leaseSafetyMargin: MARGIN,
      leaseWatchInterval: 0,
    },
    () => name,
  );
  const balancer = new LoadBalancer({
    options,
    strategy: new EqualPartitionsBalancingStrategy(EXPIRATION, () => 0),
    store: store.asStore(),
    view,
    monitored: {} as Container,
    clock,
    running,
    takeOver: (l, sentAt) => running.set(l.leaseToken, { expectedOwner: name, lastWriteAt: sentAt }),
    stolen: (token) => running.delete(token),
    excluded: new Set(),
    report: (e) => {
      throw e;
    },
    signal: new AbortController().signal,
  });
  const host: Host = { name, view, balancer, running, phase, alive: true, pausedUntil: 0 };
  return host;
}

/** Drops leases past their local deadline (the handler's signal would have fired). */
function expireLocally(h: Host, now: number) {
  for (const [token, r] of h.running) {
    if (now >= r.lastWriteAt + EXPIRATION - MARGIN) h.running.delete(token);
  }
}

async function renewAll(h: Host, clock: FakeClock, store: InMemoryLeaseStoreFake) {
  for (const [token, r] of [...h.running]) {
    const stored = h.view.leases().find((l) => l.leaseToken === token);
    if (!stored) continue;
    const sentAt = clock.monotonicNow();
    try {
      h.view.apply(await store.update(stored, renewAs(h.name)));
      r.lastWriteAt = sentAt;
    } catch (e) {
      if (!(e instanceof LeaseLostError)) throw e;
      h.running.delete(token);
    }
  }
}

async function simulate(hostCount: number, leaseCount: number, events: Event[]) {
  const clock = new FakeClock();
  const store = new InMemoryLeaseStoreFake(clock);
  for (let i = 0; i < leaseCount; i++) {
    store.put({
      ...newLease("p", "id", { id: String(i), min: "", max: "FF" }, null, LeaseMode.LatestVersion),
    });
  }
  const hosts: Host[] = [];
  let seq = 0;
  const join = async () => {
    const n = seq++;
    hosts.push(await startHost(`h${n}`, (n * 3 * STEP) % ACQUIRE, clock, store));
  };
  for (let i = 0; i < hostCount; i++) await join();
  const sorted = [...events].sort((a, b) => a.at - b.at);
  let lastEvent = 0;
  for (const e of sorted) lastEvent = Math.max(lastEvent, e.kind === "pause" ? e.at + e.forMs : e.at);
  const end = lastEvent + SETTLE_BOUND + OBSERVE;
  const moves: { at: number; token: string; to: string | null }[] = [];
  const owners = new Map<string, string | null>();
  /** `token/host` → since when that running host believes it owns a lease the store says is another's. */
  const staleSince = new Map<string, number>();
  let next = 0;
  for (let t = 0; t <= end; t += STEP) {
    while (next < sorted.length && sorted[next].at <= t) {
      const e = sorted[next++];
      const live = hosts.filter((h) => h.alive);
      if (e.kind === "join") await join();
      else if (live.length > 1 || e.kind === "pause") {
        const h = live[e.host % live.length];
        if (e.kind === "pause") h.pausedUntil = Math.max(h.pausedUntil, t + e.forMs);
        else {
          h.alive = false;
          if (e.kind === "leave") {
            for (const token of h.running.keys()) {
              const stored = h.view.leases().find((l) => l.leaseToken === token);
              if (stored) await store.update(stored, releaseAs(h.name)).catch(() => undefined);
            }
          }
          h.running.clear();
        }
      }
    }
    for (const h of hosts) {
      if (!h.alive || t < h.pausedUntil) continue;
      expireLocally(h, clock.monotonicNow());
      if (t % RENEW === 0) await renewAll(h, clock, store);
      if (t % ACQUIRE === h.phase) {
        await h.view.refresh();
        await h.balancer.balance();
      }
    }
    // The store has one owner per lease; a host it took a lease from (a steal) may still believe it owns it,
    // but once running (not paused) only until its next renewal fails: never longer than RENEW.
    const current = new Map((await store.listAll()).map((l) => [l.leaseToken, l.owner]));
    for (const h of hosts) {
      for (const [token, r] of h.running) {
        const key = `${token}/${h.name}`;
        const believes = h.alive && clock.monotonicNow() < r.lastWriteAt + EXPIRATION - MARGIN;
        if (!believes || current.get(token) === h.name || t < h.pausedUntil) staleSince.delete(key);
        else if (!staleSince.has(key)) staleSince.set(key, t);
        const since = staleSince.get(key);
        if (since !== undefined) expect(t - since, `${key} at ${t} ms`).toBeLessThanOrEqual(RENEW);
      }
    }
    for (const [token, owner] of current) {
      if (owners.has(token) && owners.get(token) !== owner) moves.push({ at: t, token, to: owner });
      owners.set(token, owner);
    }
    await clock.advance(STEP);
  }
  const live = hosts.filter((h) => h.alive).map((h) => h.name);
  return { moves, lastEvent, owners, live };
}

const eventArb: fc.Arbitrary<Event> = fc.oneof(
  fc.record({
    at: fc.integer({ min: 0, max: 160 }).map((s) => s * STEP),
    kind: fc.constant("join" as const),
  }),
  fc.record({
    at: fc.integer({ min: 0, max: 160 }).map((s) => s * STEP),
    kind: fc.constantFrom("leave" as const, "crash" as const),
    host: fc.nat(7),
  }),
  fc.record({
    at: fc.integer({ min: 0, max: 160 }).map((s) => s * STEP),
    kind: fc.constant("pause" as const),
    host: fc.nat(7),
    forMs: fc.integer({ min: 1, max: 40 }).map((s) => s * STEP),
  }),
);

describe("the fleet settles (property test, fake clock, in-memory lease store)", () => {
  it("no lasting double ownership, and no lease moves once the last event is SETTLE_BOUND old", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: MAX_LEASES }),
        fc.array(eventArb, { maxLength: 6 }),
        async (hostCount, leaseCount, events) => {
          const r = await simulate(hostCount, leaseCount, events);
          const late = r.moves.filter((m) => m.at > r.lastEvent + SETTLE_BOUND);
          expect(late).toEqual([]);
          const counts = r.live.map((name) => [...r.owners.values()].filter((o) => o === name).length);
          expect([...r.owners.values()].every((o) => o !== null && r.live.includes(o))).toBe(true);
          expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
        },
      ),
      { seed: 32, numRuns: 20 },
    );
  });
});
