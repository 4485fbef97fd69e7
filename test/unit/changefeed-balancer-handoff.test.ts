/**
 * Expiry, steal and hand-off timing on a fake clock: the LoadBalancer and the HandoffPlanner over a lease
 * view of an in-memory fake store (test/support/in-memory-lease-store.ts).
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { EqualPartitionsBalancingStrategy } from "../../packages/changefeed/src/balancing/strategy.js";
import { HandoffPlanner } from "../../packages/changefeed/src/handoff-planner.js";
import { WatchSlots } from "../../packages/changefeed/src/lease-watch.js";
import { type Lease, LeaseMode, newLease } from "../../packages/changefeed/src/leases/lease.js";
import { releaseAs } from "../../packages/changefeed/src/leases/mutations.js";
import { LeaseView } from "../../packages/changefeed/src/leases/view.js";
import { ChangeFeedDefaults, resolveOptions } from "../../packages/changefeed/src/options.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { recordingBalancer } from "../support/changefeed-fakes.js";
import { InMemoryLeaseStoreFake } from "../support/in-memory-lease-store.js";

const EXPIRATION = 6_000;
const WATCH = 1_000;

function optionsFor(me: string, extra: Record<string, number> = {}) {
  return resolveOptions(
    {
      monitoredContainer: {} as Container,
      leaseContainer: {} as Container,
      instanceName: me,
      leaseRenewInterval: 1_000,
      leaseAcquireInterval: 2_000,
      leaseExpirationInterval: EXPIRATION,
      leaseWatchInterval: WATCH,
      handoffTimeout: 10_000,
      ...extra,
    },
    () => me,
  );
}

const lease = (token: string, owner: string | null): Lease => ({
  ...newLease("p", "id", { id: token, min: "", max: "FF" }, '"1"', LeaseMode.LatestVersion),
  owner,
});

async function balancerFor(
  me: string,
  clock: FakeClock,
  store: InMemoryLeaseStoreFake,
  extra: Record<string, number> = {},
) {
  const view = new LeaseView(store.asStore());
  await view.load();
  const options = optionsFor(me, extra);
  const { balancer, running, taken, stolen } = recordingBalancer(me, {
    options,
    strategy: new EqualPartitionsBalancingStrategy(EXPIRATION, () => 0),
    store: store.asStore(),
    view,
    clock,
  });
  const slots = new WatchSlots({ options, view, clock });
  return { view, balancer, slots, taken, stolen, running };
}

describe("expiry and steal (fake clock)", () => {
  it("takes another host's lease only once it has not been written for the expiration interval", async () => {
    const clock = new FakeClock();
    const store = new InMemoryLeaseStoreFake(clock);
    store.put(lease("0", "b"));
    const a = await balancerFor("a", clock, store);
    await clock.advance(EXPIRATION);
    await a.balancer.balance();
    expect(a.taken).toEqual([]);
    await clock.advance(1);
    await a.balancer.balance();
    expect(a.taken).toEqual(["0"]);
    expect(store.get("p..0")?.owner).toBe("a");
  });

  it("steals one lease from a busier live host, and the victim sees it stolen on its next round", async () => {
    const clock = new FakeClock();
    const store = new InMemoryLeaseStoreFake(clock);
    const b = await balancerFor("b", clock, store);
    store.put(lease("0", null));
    store.put(lease("1", null));
    await b.view.refresh();
    await b.balancer.balance();
    expect(b.taken.sort()).toEqual(["0", "1"]);
    const a = await balancerFor("a", clock, store);
    await clock.advance(100);
    await a.balancer.balance();
    expect(a.taken).toEqual(["0"]);
    await b.view.refresh();
    await b.balancer.balance();
    expect(b.stolen).toEqual(["0"]);
    expect([...b.running.keys()]).toEqual(["1"]);
    // Balanced now: nobody takes more.
    await a.balancer.balance();
    await b.balancer.balance();
    expect(a.taken).toEqual(["0"]);
    expect(b.taken.sort()).toEqual(["0", "1"]);
  });
});

describe("hand-off (fake clock)", () => {
  /**
   * Host a stopping with leases 0–3, b and c live with one each. The acquire interval is longer than the three
   * hosts' slots (3 × WATCH) unless `acquire` says otherwise: a fleet whose slots all come within a round.
   */
  async function stoppingHost(clock: FakeClock, acquire = 5_000, store = new InMemoryLeaseStoreFake(clock)) {
    for (const t of ["0", "1", "2", "3"]) store.put(lease(t, "a"));
    store.put(lease("4", "b"));
    store.put(lease("5", "c"));
    const a = await balancerFor("a", clock, store, { leaseAcquireInterval: acquire });
    const planner = new HandoffPlanner({
      options: optionsFor("a", { leaseAcquireInterval: acquire }),
      view: a.view,
      balancer: a.balancer,
      slots: a.slots,
      clock,
    });
    const entries = ["0", "1", "2", "3"].map((t) => {
      const abort = new AbortController();
      return {
        token: t,
        abort,
        get lease() {
          return store.get(`p..${t}`) as Lease;
        },
        signal: abort.signal,
        close: (_reason: "released") => abort.abort(),
      };
    });
    const release = async (e: (typeof entries)[number], successor: string) => {
      await store.update(e.lease, releaseAs("a", successor));
    };
    return { store, planner, entries, release };
  }

  it("releases each successor's share just before that successor's watch slot, balanced", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1) + 10); // 10 ms into a watch slot
    const { store, planner, entries, release } = await stoppingHost(clock);
    const plan = await planner.plan(entries);
    const shares = Object.fromEntries(plan.map((b) => [b.successor, b.leases.map((e) => e.token).sort()]));
    expect(shares).toEqual({ b: ["0", "2"], c: ["1", "3"] });
    const lead = Math.min(ChangeFeedDefaults.handoffLead, WATCH / 4);
    for (const batch of plan) expect((batch.at + lead) % WATCH).toBe(0);
    const done = planner.handOff(entries, release, new AbortController().signal);
    await clock.advance(Math.max(...plan.map((b) => b.at)) - clock.now());
    const releases = store.writes.filter((w) => w.owner === null);
    expect(releases).toHaveLength(4);
    for (const batch of plan) {
      for (const e of batch.leases) {
        expect(releases.find((w) => w.id === e.lease.id)?.at).toBe(batch.at);
      }
    }
    // The successors take their leases; the drain notices at its next check and closes the entries.
    for (const t of ["0", "1", "2", "3"]) {
      const l = store.get(`p..${t}`) as Lease;
      store.put({ ...l, owner: l.properties.handoffTo as string });
    }
    await clock.advance(ChangeFeedDefaults.handoffCheckInterval);
    await done;
    expect(entries.every((e) => e.signal.aborted)).toBe(true);
  });

  it("releases everything at once where the slots are further apart than a round (the fleet signal tells the successors)", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1) + 10);
    // 3 hosts × 1 s slots > a 2 s round: every host reads the fleet signal each round.
    const { store, planner, entries, release } = await stoppingHost(clock, 2_000);
    const plan = await planner.plan(entries);
    expect(plan.every((b) => b.untimed && b.at === clock.now())).toBe(true);
    const done = planner.handOff(entries, release, new AbortController().signal);
    await clock.advance(0);
    expect(store.writes.filter((w) => w.owner === null && w.at === clock.now())).toHaveLength(4);
    for (const t of ["0", "1", "2", "3"]) {
      const l = store.get(`p..${t}`) as Lease;
      store.put({ ...l, owner: l.properties.handoffTo as string });
    }
    await clock.advance(ChangeFeedDefaults.handoffCheckInterval);
    await done;
  });

  it("hands nothing to a host that is stopping too, and a lease handed to one is available to the others", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1) + 10);
    const store = new InMemoryLeaseStoreFake(clock);
    // b is stopping: it has released one of its leases to c (and still holds another), so it looks the least
    // loaded; it also holds lease 7, handed to it by a host that did not see it stopping.
    store.put(releaseAs("b", "c")({ ...lease("6", "b") }));
    store.put(releaseAs("x", "b")({ ...lease("7", "x") }));
    const { planner, entries } = await stoppingHost(clock, 5_000, store);
    const plan = await planner.plan(entries);
    expect(plan.map((b) => b.successor)).toEqual(["c"]);
    // For c, lease 7 is not b's: it is available, and c (short of its share) takes it.
    const c = await balancerFor("c", clock, store, { leaseAcquireInterval: 5_000 });
    const handedToB = c.balancer.effectiveLeases(clock.now()).find((l) => l.leaseToken === "7");
    expect(handedToB?.owner).toBeNull();
  });

  it("stops waiting when the stop's signal fires: no release is left pending on a timer", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1) + 10);
    const { store, planner, entries, release } = await stoppingHost(clock);
    const abort = new AbortController();
    let finished = false;
    const done = planner.handOff(entries, release, abort.signal).then(() => {
      finished = true;
    });
    await clock.advance(1);
    abort.abort();
    await clock.advance(0);
    await done;
    expect(finished).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    expect(store.writes.filter((w) => w.owner === null).length).toBeLessThan(4);
  });
});
