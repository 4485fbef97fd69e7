/**
 * Rules that keep a large fleet's balancing cheap, on a fake clock over the in-memory lease store: a round
 * stops at the first lease another host took before it (the rest was decided on the same stale view) and re-plans
 * soon on a fresh one; the watch skips a slot that the view no longer gives this host (its first slot is planned
 * from the view it started with, before most of the fleet held leases), and its sleep is cut short when a round's
 * refresh changed the participants, so that it plans its slot again from the view as the fleet now sees it.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it, vi } from "vitest";
import { FairShareBalancingStrategy } from "../../packages/changefeed/src/balancing/fair-share.js";
import { LeaseWatch, WatchSlots } from "../../packages/changefeed/src/lease-watch.js";
import { type Lease, LeaseMode, newLease } from "../../packages/changefeed/src/leases/lease.js";
import { LeaseView } from "../../packages/changefeed/src/leases/view.js";
import { resolveOptions } from "../../packages/changefeed/src/options.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { recordingBalancer } from "../support/changefeed-fakes.js";
import { InMemoryLeaseStoreFake } from "../support/in-memory-lease-store.js";

const EXPIRATION = 6_000;
const ACQUIRE = 2_000;
const SETTLE = 500;
const WATCH = 1_000;

const lease = (token: string, owner: string | null): Lease => ({
  ...newLease("p", "id", { id: token, min: "", max: "FF" }, '"1"', LeaseMode.LatestVersion),
  owner,
});

async function balancerFor(me: string, clock: FakeClock, store: InMemoryLeaseStoreFake) {
  const view = new LeaseView(store.asStore(), () => clock.now());
  await view.load();
  const options = resolveOptions(
    {
      monitoredContainer: {} as Container,
      leaseContainer: {} as Container,
      instanceName: me,
      leaseRenewInterval: 1_000,
      leaseAcquireInterval: ACQUIRE,
      leaseExpirationInterval: EXPIRATION,
      leaseWatchInterval: WATCH,
      leaseJoinSettleDelay: SETTLE,
    },
    () => me,
  );
  const { balancer, taken } = recordingBalancer(me, {
    options,
    // `() => 0`: a first start takes every lease from the first.
    strategy: new FairShareBalancingStrategy(EXPIRATION, () => 0),
    store: store.asStore(),
    view,
    clock,
  });
  const slots = new WatchSlots({ options, view, clock });
  const watch = new LeaseWatch({ options, view, clock, slots, rounds: balancer });
  return { view, balancer, watch, taken };
}

describe("a round that finds a lease taken before it", () => {
  it("stops there, tries none of the rest, and re-plans after leaseJoinSettleDelay", async () => {
    const clock = new FakeClock();
    const store = new InMemoryLeaseStoreFake(clock);
    for (const t of ["0", "1", "2", "3", "4", "5"]) store.put(lease(t, null));
    const a = await balancerFor("a", clock, store);
    // Another host, started at the same time from its own random start, took lease 2 after a's view was read.
    store.put({ ...(store.get("p..2") as Lease), owner: "b" });
    expect(a.balancer.nextRoundDelay()).toBe(ACQUIRE);
    await a.balancer.balance();
    expect(a.taken).toEqual(["0", "1"]);
    expect(store.writes.map((w) => w.id)).toEqual(["p..0", "p..1"]);
    expect(a.balancer.nextRoundDelay()).toBe(SETTLE);
  });
});

describe("the watch's planned slot", () => {
  it("is skipped when the view no longer gives it to this host, and the next one is planned from the view", async () => {
    const clock = new FakeClock(0);
    const store = new InMemoryLeaseStoreFake(clock);
    store.put(lease("0", "a"));
    store.put(lease("1", "c"));
    const b = await balancerFor("b", clock, store);
    // Participants a, b, c: slot k is b's when k mod 3 = 1.
    expect(b.watch.nextWatchAt(0)).toBe(1 * WATCH);
    // Before it comes, the view learns of a fourth host, "a2" (a, a2, b, c): slot 1 is a2's now.
    store.put(lease("2", "a2"));
    await b.view.refresh();
    const reads = vi.spyOn(b.view, "refresh");
    await clock.advance(WATCH);
    await b.watch.watchTick();
    expect(reads).not.toHaveBeenCalled();
    // Planned again from the view: slot 2 (2 mod 4 = b's rank), where it reads.
    expect(b.watch.nextWatchAt(clock.now())).toBe(2 * WATCH);
    await clock.advance(WATCH);
    await b.watch.watchTick();
    expect(reads).toHaveBeenCalledTimes(1);
  });

  it("is read when the view still gives it to this host", async () => {
    const clock = new FakeClock(0);
    const store = new InMemoryLeaseStoreFake(clock);
    store.put(lease("0", "a"));
    store.put(lease("1", "c"));
    const b = await balancerFor("b", clock, store);
    expect(b.watch.nextWatchAt(0)).toBe(WATCH);
    const reads = vi.spyOn(b.view, "refresh");
    await clock.advance(WATCH);
    await b.watch.watchTick();
    expect(reads).toHaveBeenCalledTimes(1);
  });
});

describe("the watch's sleep until its slot", () => {
  // Participants a, b, c at 1.5 s: b's next slot is 4 (k mod 3 = 1). With a fourth host a2 it is slot 2.
  async function sleepingB() {
    const clock = new FakeClock(0);
    const store = new InMemoryLeaseStoreFake(clock);
    store.put(lease("0", "a"));
    store.put(lease("1", "c"));
    const b = await balancerFor("b", clock, store);
    await clock.advance(1_500);
    let woke: boolean | undefined;
    const stop = new AbortController();
    const sleep = b.watch.untilNextSlot(stop.signal).then((due) => {
      woke = due;
      return due;
    });
    return { clock, store, b, stop, sleep, woke: () => woke };
  }

  it("ends at a re-plan once a refresh changed the participants, and the next plan is the new view's slot", async () => {
    const { clock, store, b, stop, woke } = await sleepingB();
    // A balancing round read the feed on a fleet signal: a2 joined.
    store.put(lease("2", "a2"));
    await b.view.refresh();
    b.watch.replan();
    await clock.advance(0);
    expect(woke()).toBe(false);
    const next = b.watch.untilNextSlot(stop.signal);
    await clock.advance(500);
    expect(await next).toBe(true);
    expect(clock.now()).toBe(2 * WATCH);
  });

  it("goes on to its slot when a refresh left the participants as they were", async () => {
    const { clock, store, b, sleep, woke } = await sleepingB();
    // The feed brought a renewal of a's lease: the same three participants.
    store.put(store.get("p..0") as Lease);
    await b.view.refresh();
    b.watch.replan();
    await clock.advance(2_000);
    expect(woke()).toBeUndefined();
    await clock.advance(500);
    expect(await sleep).toBe(true);
    expect(clock.now()).toBe(4 * WATCH);
  });

  it("ends without its slot when the processor stops", async () => {
    const { clock, stop, woke } = await sleepingB();
    stop.abort();
    await clock.advance(0);
    expect(woke()).toBe(false);
  });
});
