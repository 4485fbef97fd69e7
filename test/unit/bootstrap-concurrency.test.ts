/**
 * The bootstrap creates the missing leases ChangeFeedDefaults.bootstrapCreateConcurrency at a time, not one by
 * one (10,000 leases one at a time outlasted the lock's ttl), and a failed create ends the others and the start.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { Bootstrapper } from "../../packages/changefeed/src/bootstrapper.js";
import { type Lease, LeaseMode } from "../../packages/changefeed/src/leases/lease.js";
import type { LeaseStore } from "../../packages/changefeed/src/leases/store.js";
import { ChangeFeedDefaults } from "../../packages/changefeed/src/options.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { track } from "../support/changefeed-fakes.js";

const WIDTH = ChangeFeedDefaults.bootstrapCreateConcurrency;

/** A bootstrap of `ranges` ranges whose creates answer only when the test says so. */
function bootstrapping(ranges: number) {
  const pending: { lease: Lease; answer: (error?: Error) => void; signal?: AbortSignal }[] = [];
  const created: string[] = [];
  const calls: string[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const store = {
    prefix: "p",
    layout: "id",
    listAll: async () => [],
    isInitialized: async () => calls.includes("markInitialized"),
    acquireInitLock: async () => '"lock"',
    markInitialized: async () => {
      calls.push("markInitialized");
    },
    releaseInitLock: async () => {
      calls.push("releaseInitLock");
    },
    create: (lease: Lease, signal?: AbortSignal) =>
      new Promise<Lease>((resolve, reject) => {
        inFlight++;
        mostInFlight = Math.max(mostInFlight, inFlight);
        const answer = (error?: Error) => {
          inFlight--;
          if (error) reject(error);
          else {
            created.push(lease.leaseToken);
            resolve(lease);
          }
        };
        signal?.addEventListener("abort", () => answer(new Error("aborted")), { once: true });
        pending.push({ lease, answer, signal });
      }),
  } as unknown as LeaseStore;
  const monitored = {
    readPartitionKeyRanges: () => ({
      fetchAll: async () => ({
        resources: Array.from({ length: ranges }, (_, i) => ({
          id: String(i),
          minInclusive: i.toString(16).padStart(4, "0"),
          maxExclusive: i === ranges - 1 ? "FF" : (i + 1).toString(16).padStart(4, "0"),
        })),
      }),
    }),
  } as unknown as Container;
  const run = track(
    new Bootstrapper({
      store,
      monitored,
      mode: LeaseMode.LatestVersion,
      clock: new FakeClock(),
      retryDelay: 1_000,
      requestTimeout: 60_000,
    }).run(new AbortController().signal),
  );
  const settle = async () => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };
  /** Answers every create waiting, in order (`fail`: the token whose create fails). */
  const answerAll = async (fail?: string) => {
    for (const p of pending.splice(0)) {
      if (!p.signal?.aborted)
        p.answer(p.lease.leaseToken === fail ? new Error("500 from the service") : undefined);
    }
    await settle();
  };
  return { run, created, calls, pending, settle, answerAll, mostInFlight: () => mostInFlight };
}

describe("the bootstrap's lease creates", () => {
  it(`creates ${WIDTH} at a time, every missing lease, then .info`, async () => {
    const b = bootstrapping(2 * WIDTH + 7);
    await b.settle();
    expect(b.pending).toHaveLength(WIDTH);
    expect(b.calls).toEqual([]);
    while (b.pending.length > 0) await b.answerAll();
    await b.settle();
    expect(b.mostInFlight()).toBe(WIDTH);
    expect(new Set(b.created).size).toBe(2 * WIDTH + 7);
    expect(b.calls).toEqual(["markInitialized", "releaseInitLock"]);
    expect(b.run.settled && b.run.error === undefined).toBe(true);
  });

  it("a create that fails ends the others in flight, starts no more, fails the start and releases the lock", async () => {
    const b = bootstrapping(3 * WIDTH);
    await b.settle();
    await b.answerAll("3");
    await b.settle();
    expect(b.run.error).toBeInstanceOf(Error);
    expect((b.run.error as Error).message).toBe("500 from the service");
    // The first batch answered (one failed), the second was started by the answers before the failure and ended.
    expect(b.created.length).toBeLessThan(WIDTH);
    expect(b.pending.every((p) => p.signal?.aborted)).toBe(true);
    expect(b.calls).toEqual(["releaseInitLock"]);
  });
});
