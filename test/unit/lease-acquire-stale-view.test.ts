/**
 * A host back from a pause longer than the lease expiration interval balances on a view older than the other
 * hosts' renewals: every lease it saw looks expired. It must take none that its owner renewed meanwhile, whether
 * its write goes out with the stale copy's etag (412 → the fresh copy is not expired → not taken) or a lease-feed
 * read refreshed the view during the round (the fresh etag would let the write through). Found by the fleet
 * simulation (bench/fleet/): before the fix, such a host took 87–90 of 100 leases. Also: the store's 412 backoff
 * waits on the processor's clock.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { LeaseOperationCounters, LeaseStore } from "../../packages/changefeed/src/leases/store.js";
import { LeaseView } from "../../packages/changefeed/src/leases/view.js";
import { resolveOptions } from "../../packages/changefeed/src/options.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { lease, lease0, testBalancer, track } from "../support/changefeed-fakes.js";
import { InMemoryLeaseStoreFake } from "../support/in-memory-lease-store.js";

const EXPIRATION = 60_000;

async function pausedHost() {
  const clock = new FakeClock();
  const store = new InMemoryLeaseStoreFake(clock);
  for (const t of ["0", "1", "2"]) store.put(lease(t, "other"));
  const view = new LeaseView(store.asStore());
  await view.load();
  // The pause: the owner renews every lease (the view does not see it), and time passes the expiration interval.
  await clock.advance(EXPIRATION + 10_000);
  for (const t of ["0", "1", "2"])
    store.put({ ...(store.get(lease(t, null).id) as ReturnType<typeof lease>) });
  return { clock, store, view, balancer: balancerOf(store, view, clock) };
}

/** The load balancer of host "me" over the fake store and view, with this file's expiration interval. */
function balancerOf(store: InMemoryLeaseStoreFake, view: LeaseView, clock: FakeClock) {
  return testBalancer({
    options: resolveOptions(
      {
        monitoredContainer: {} as Container,
        leaseContainer: {} as Container,
        leaseExpirationInterval: EXPIRATION,
      },
      () => "me",
    ),
    store: store.asStore(),
    view,
    clock,
  });
}

describe("a balancing round on a view older than the owners' renewals", () => {
  it("takes no lease whose service copy was renewed (the write's re-read after the 412 is not expired)", async () => {
    const { store, balancer } = await pausedHost();
    await balancer.balance();
    expect(store.writes).toEqual([]);
    for (const t of ["0", "1", "2"]) expect(store.get(lease(t, null).id)?.owner).toBe("other");
  });

  it("takes no lease the view learned mid-round was renewed (its fresh etag would let the write through)", async () => {
    const { store, view, balancer } = await pausedHost();
    // The first acquire's re-read is when a lease-feed read lands: the view now holds every renewed copy.
    const update = store.update.bind(store);
    store.update = async (cached, mutate) => {
      await view.refresh();
      return update(cached, mutate);
    };
    await balancer.balance();
    expect(store.writes).toEqual([]);
  });

  it("still takes a lease whose owner really stopped writing it", async () => {
    const clock = new FakeClock();
    const store = new InMemoryLeaseStoreFake(clock);
    store.put(lease("0", "other"));
    const view = new LeaseView(store.asStore());
    await view.load();
    await clock.advance(EXPIRATION + 10_000);
    await balancerOf(store, view, clock).balance();
    expect(store.get(lease("0", null).id)?.owner).toBe("me");
  });
});

describe("LeaseStore's 412 backoff", () => {
  it("waits on the clock it is given: the retry after a 412 runs only when that clock moves", async () => {
    const clock = new FakeClock();
    let replaces = 0;
    const stored = { ...lease0("me"), etag: '"2"' };
    const container = {
      item: () => ({
        replace: async (body: Record<string, unknown>) => {
          replaces++;
          if (replaces === 1) throw Object.assign(new Error("precondition failed"), { code: 412 });
          return { resource: { ...body, _etag: '"3"' }, requestCharge: 5, headers: {} };
        },
        read: async () => ({
          statusCode: 200,
          resource: { ...body(stored), _etag: '"2"' },
          requestCharge: 1,
        }),
      }),
    } as unknown as Container;
    const waits: number[] = [];
    const store = new LeaseStore(
      container,
      "p",
      "id",
      new LeaseOperationCounters(),
      () => clock.now(),
      (ms, signal) => {
        waits.push(ms);
        return clock.sleep(ms, signal);
      },
    );
    const write = track(store.update(lease0("me"), (l) => l));
    await clock.advance(0);
    expect(replaces).toBe(1);
    expect(waits).toHaveLength(1);
    expect(write.settled).toBe(false);
    await clock.advance(10);
    expect(replaces).toBe(2);
    expect(write.settled).toBe(true);
    expect(write.error).toBeUndefined();
  });
});

/** A lease as its document (what a read returns). */
function body(l: ReturnType<typeof lease0>): Record<string, unknown> {
  return {
    id: l.id,
    version: 0,
    LeaseToken: l.leaseToken,
    FeedRange: { EffectiveRange: { min: "", max: "FF" } },
    Owner: l.owner,
    ContinuationToken: l.continuationToken,
    properties: {},
    timestamp: new Date(0).toISOString(),
  };
}
