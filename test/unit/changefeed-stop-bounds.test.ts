/**
 * stop()'s requests are bounded by requestTimeout, on a fake clock: the hand-off's reads of the lease feed (one
 * that never answers held stop() for good) and the last releases of leftover leases; abandon() ends them at once,
 * without an error report.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { RequestTimeoutError } from "../../packages/changefeed/src/bounded-request.js";
import { HandoffPlanner } from "../../packages/changefeed/src/handoff-planner.js";
import { WatchSlots } from "../../packages/changefeed/src/lease-watch.js";
import { LeaseView } from "../../packages/changefeed/src/leases/view.js";
import { releaseLeftovers } from "../../packages/changefeed/src/leftover-release.js";
import { resolveOptions } from "../../packages/changefeed/src/options.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { lease, lease0, testBalancer, track } from "../support/changefeed-fakes.js";
import { InMemoryLeaseStoreFake } from "../support/in-memory-lease-store.js";

const TIMEOUT = 3_000;

/** A request that never answers. */
const hung = <T>() => new Promise<T>(() => undefined);

describe("the hand-off's lease feed reads", () => {
  /** Host "me" has released lease 0, which "other" (alive: it owns lease 1) may take; the feed hangs. */
  async function stopping(clock: FakeClock) {
    const store = new InMemoryLeaseStoreFake(clock);
    store.put(lease("0", null));
    store.put(lease("1", "other"));
    const view = new LeaseView(store.asStore());
    await view.load();
    let refreshes = 0;
    view.refresh = () => {
      refreshes++;
      return hung();
    };
    const options = resolveOptions(
      {
        monitoredContainer: {} as Container,
        leaseContainer: {} as Container,
        instanceName: "me",
        requestTimeout: TIMEOUT,
        handoffTimeout: 10_000,
      },
      () => "me",
    );
    const balancer = testBalancer({ options, store: store.asStore(), view, clock });
    const slots = new WatchSlots({ options, view, clock });
    const planner = new HandoffPlanner({ options, view, balancer, slots, clock });
    const live = new AbortController();
    const entry = { lease: lease("0", "me"), signal: live.signal, close: () => live.abort() };
    return { planner, entry, refreshes: () => refreshes };
  }

  it("a read that never answers is given up after requestTimeout: the plan is made from the view as it is", async () => {
    const clock = new FakeClock();
    const h = await stopping(clock);
    const plan = track(h.planner.plan([h.entry]));
    await clock.advance(TIMEOUT - 1);
    expect(plan.settled).toBe(false);
    await clock.advance(1);
    expect(plan.value?.map((b) => b.successor)).toEqual(["other"]);
  });

  it("draining released leases ends at the handoff timeout though every read hangs", async () => {
    const clock = new FakeClock();
    const h = await stopping(clock);
    const drained = track(h.planner.drainUntilTaken([h.entry], () => {}, new AbortController().signal));
    await clock.advance(10 * 60_000);
    expect(drained.settled).toBe(true);
    expect(drained.error).toBeUndefined();
    expect(h.refreshes()).toBeGreaterThan(1);
  });
});

describe("stop()'s release of leftover leases", () => {
  async function leftovers(clock: FakeClock, hangFirst: number) {
    const store = new InMemoryLeaseStoreFake(clock);
    store.put(lease0("me", '"5"'));
    const view = new LeaseView(store.asStore());
    await view.load();
    const real = store.update.bind(store);
    let calls = 0;
    store.update = (l, mutate) => (++calls <= hangFirst ? hung() : real(l, mutate));
    const reported: unknown[] = [];
    const released: string[] = [];
    const abandon = new AbortController();
    const done = track(
      releaseLeftovers({
        store: store.asStore(),
        view,
        me: "me",
        clock,
        retryInterval: 1_000,
        giveUpAfter: 60_000,
        requestTimeout: TIMEOUT,
        released: (t) => released.push(t),
        report: (e) => reported.push(e),
        signal: abandon.signal,
      }),
    );
    return { store, done, reported, released, abandon, calls: () => calls };
  }

  it("a release that never answers is given up after requestTimeout, reported, and retried", async () => {
    const clock = new FakeClock();
    const l = await leftovers(clock, 1);
    await clock.advance(TIMEOUT - 1);
    expect(l.reported).toEqual([]);
    await clock.advance(1);
    expect(l.reported).toHaveLength(1);
    expect(l.reported[0]).toBeInstanceOf(RequestTimeoutError);
    await clock.advance(1_000);
    expect(l.calls()).toBe(2);
    expect(l.done.settled).toBe(true);
    expect(l.released).toEqual(["0"]);
    expect(l.store.get(lease0().id)?.owner).toBeNull();
  });

  it("abandon() during a hung release ends it without an error report", async () => {
    const clock = new FakeClock();
    const l = await leftovers(clock, Number.POSITIVE_INFINITY);
    await clock.advance(1);
    expect(l.calls()).toBe(1);
    l.abandon.abort();
    await clock.advance(1);
    expect(l.done.settled).toBe(true);
    expect(l.reported).toEqual([]);
    expect(l.calls()).toBe(1);
  });
});
