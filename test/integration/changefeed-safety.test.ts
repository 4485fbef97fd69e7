/**
 * The processor's safety defects of issue 9, against the emulator through the real SDK (real timers). Faults
 * the emulator cannot be asked for (a 503 on a lease write, a hanging write, a refused continuation) are injected
 * into the SDK's request pipeline (test/support/faults.ts); everything else is real. When something happens is
 * judged on a fake clock in test/unit/changefeed-lease-timing.test.ts and test/unit/changefeed-feed-errors.test.ts;
 * here, what happens (events, counts, lease documents), never how long it took.
 */
import type { Container, CosmosClient, Database } from "@azure/cosmos";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { settled, waitUntil } from "../../bench/lib/until.js";
import { LeaseContainerError } from "../../packages/changefeed/src/leases/open.js";
import { MonitoredContainerGoneError } from "../../packages/changefeed/src/processing/feed-errors.js";
import {
  type ChangeFeedContext,
  type ChangeFeedProcessor,
  createChangeFeedProcessor,
} from "../../packages/changefeed/src/processor.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { CosmosFeedError } from "../../packages/core/src/errors.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { type FaultRule, faultPlugins, serviceError } from "../support/faults.js";
import { FAST_INTERVALS, processorContainers } from "../support/processor-containers.js";

interface Doc {
  id: string;
  pk: string;
}

const FAST = FAST_INTERVALS;

let t: TestEmulator;
let db: Database;
const running: ChangeFeedProcessor<Doc>[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("cfs") })).database;
});
afterEach(async () => {
  await Promise.allSettled(running.splice(0).map((p) => p.abandon()));
});
afterAll(async () => {
  await t.close();
});

const containers = (ranges: number) => processorContainers(db, ranges);

const pathOf = (ctx: { path?: string }) => decodeURIComponent(ctx.path ?? "");

/** A host on its own client; `faults` go into that client's pipeline. */
function host(
  monitored: Container,
  leases: Container,
  name: string,
  handler: (docs: Doc[], ctx: ChangeFeedContext) => Promise<void>,
  extra: Record<string, unknown> = {},
  ...faults: FaultRule[]
): ChangeFeedProcessor<Doc> {
  const client: CosmosClient = t.newClient(faults.length > 0 ? faultPlugins(...faults) : {});
  const p = createChangeFeedProcessor<Doc>(
    {
      monitoredContainer: client.database(db.id).container(monitored.id),
      leaseContainer: client.database(db.id).container(leases.id),
      instanceName: name,
      startFromBeginning: true,
      handoffTimeout: 0,
      ...FAST,
      ...extra,
    },
    handler,
  );
  running.push(p);
  return p;
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function leaseDocs(
  leases: Container,
): Promise<{ id: string; Owner: string | null; timestamp: string }[]> {
  const { resources } = await leases.items
    .query<{ id: string; Owner: string | null; timestamp: string }>(
      "SELECT c.id, c.Owner, c.timestamp FROM c WHERE IS_DEFINED(c.LeaseToken)",
    )
    .fetchAll();
  return resources;
}

describe("local lease deadline", () => {
  it("aborts ctx.signal and reports the lease lost (expired) by its own deadline when lease writes fail with 503", async () => {
    const { monitored, leases } = await containers(1);
    let failWrites = false;
    const signals: AbortSignal[] = [];
    const lost: [string, string][] = [];
    const p = host(
      monitored,
      leases,
      "cut-off",
      async (_docs, ctx) => {
        signals.push(ctx.signal);
        await new Promise<void>((r) => ctx.signal.addEventListener("abort", () => r(), { once: true }));
      },
      {},
      {
        match: (ctx) => ctx.method === "PUT" && pathOf(ctx).includes(`/colls/${leases.id}/docs/`),
        run: async (_ctx, send) => {
          if (failWrites) throw serviceError(503);
          return send();
        },
      },
    );
    p.on("error", () => {});
    p.on("lost", (token, reason) => lost.push([token, reason]));
    await p.start();
    await monitored.items.create<Doc>({ id: "a", pk: "a" });
    await waitUntil("the handler holding a batch", () => signals.length === 1);
    failWrites = true;
    await waitUntil("ctx.signal after the renewals failed", () => signals[0].aborted);
    // Lost by its own deadline ("expired"), with no other host around to take it. That the deadline falls a
    // safety margin before the lease expires for others is judged on a fake clock (changefeed-lease-timing).
    expect(lost).toEqual([["0", "expired"]]);
    expect(p.ownedLeaseTokens()).toEqual([]);
  });

  it("renews leases in parallel: while one lease's write hangs, the others are renewed", async () => {
    const { monitored, leases } = await containers(4);
    let slowed = false;
    let hanging = false;
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    /** Lease writes that completed while lease 0's write hung, by lease document id. */
    const writtenWhileHung = new Map<string, number>();
    const leaseWrite = (ctx: { method?: string; path?: string }) =>
      ctx.method === "PUT" && pathOf(ctx).includes(`/colls/${leases.id}/docs/`);
    const p = host(
      monitored,
      leases,
      "parallel",
      async () => {},
      {},
      {
        match: leaseWrite,
        run: async (ctx, send) => {
          const id = pathOf(ctx).split("/").pop() as string;
          if (slowed && !hanging && id.endsWith("..0")) {
            hanging = true;
            await gate; // hangs until the test ends
            return send();
          }
          const res = await send();
          if (hanging) writtenWhileHung.set(id, (writtenWhileHung.get(id) ?? 0) + 1);
          return res;
        },
      },
    );
    p.on("error", () => {});
    try {
      await p.start();
      await waitUntil("4 leases owned", () => p.ownedLeaseTokens().length === 4);
      const others = (await leaseDocs(leases)).map((d) => d.id).filter((id) => !id.endsWith("..0"));
      expect(others).toHaveLength(3);
      slowed = true;
      // Renewals run one after another, these would wait behind the hanging write forever.
      await waitUntil("lease 0's write to hang", () => hanging);
      await waitUntil("two renewals of each other lease while lease 0's write hangs", () =>
        others.every((id) => (writtenWhileHung.get(id) ?? 0) >= 2),
      );
      for (const d of (await leaseDocs(leases)).filter((d) => !d.id.endsWith("..0")))
        expect(d.Owner).toBe("parallel");
    } finally {
      release();
    }
  });
});

describe("feed-read errors", () => {
  it("closes the lease with an error event (404, typed) when the monitored container is deleted, without retrying", async () => {
    const { monitored, leases } = await containers(1);
    let reads = 0;
    const errors: unknown[] = [];
    const lost: string[] = [];
    const p = host(
      monitored,
      leases,
      "orphan",
      async () => {},
      {},
      {
        match: (ctx) => ctx.method === "GET" && pathOf(ctx).endsWith(`/colls/${monitored.id}/docs`),
        run: async (_ctx, send) => {
          reads++;
          return send();
        },
      },
    );
    p.on("error", (e) => errors.push(e));
    p.on("lost", (_token, reason) => lost.push(reason));
    await p.start();
    await waitUntil("the first feed read", () => reads > 0);
    await monitored.delete();
    await waitUntil("the lease closed", () => lost.length > 0);
    expect(lost).toEqual(["container-gone"]);
    const gone = errors.find((e) => e instanceof MonitoredContainerGoneError) as MonitoredContainerGoneError;
    expect(gone?.statusCode).toBe(404);
    expect(p.ownedLeaseTokens()).toEqual([]);
    // That the worker reads no more after the 404 (one read, then it ends) is judged on a fake clock:
    // test/unit/changefeed-feed-errors.test.ts, "ends the worker on 404 … after one read".
  });

  it("keeps a lease whose continuation is refused (400): errors reported, the lease neither lost nor given up", async () => {
    const { monitored, leases } = await containers(1);
    let refused = 0;
    const errors: unknown[] = [];
    const lost: string[] = [];
    const p = host(
      monitored,
      leases,
      "refused",
      async () => {},
      // Leases that cannot expire during the test however slow the machine: only the 400 could end this one.
      { leaseRenewInterval: 10_000, leaseExpirationInterval: 60_000 },
      {
        match: (ctx) => ctx.method === "GET" && pathOf(ctx).endsWith(`/colls/${monitored.id}/docs`),
        run: async () => {
          refused++;
          throw serviceError(400, "invalid continuation token");
        },
      },
    );
    p.on("error", (e) => errors.push(e));
    p.on("lost", (_token, reason) => lost.push(reason));
    await p.start();
    await waitUntil("two refused reads", () => refused >= 2);
    expect(lost).toEqual([]);
    expect(p.ownedLeaseTokens()).toEqual(["0"]);
    expect(errors.length).toBeGreaterThan(0);
    // That the retries back off (0.5–1 s, doubling) instead of coming at the 50 ms poll interval is judged on a
    // fake clock: test/unit/changefeed-feed-errors.test.ts, "backs off exponentially … on 400".
  });
});

describe("lifecycle", () => {
  it("stop() during start() stops: no lease stays owned and nothing is taken afterwards", async () => {
    const { monitored, leases } = await containers(2);
    // The processor's timers run on a fake clock: once stopped, none may be left to run a later round.
    const clock = new FakeClock(Date.now());
    const p = host(monitored, leases, "hasty", async () => {}, { clock });
    const started = p.start();
    await delay(5);
    await p.stop();
    await started;
    expect(clock.pendingTimers).toBe(0);
    expect(p.ownedLeaseTokens()).toEqual([]);
    for (const d of await leaseDocs(leases)) expect(d.Owner).toBeNull();
  });

  it("stop() interrupts a start waiting for another host's bootstrap lock", async () => {
    const { monitored, leases } = await containers(1);
    // Another host's bootstrap lock (whichever prefix: lock ids end in ".lock").
    const probe = host(monitored, leases, "probe", async () => {});
    await probe.start();
    await probe.abandon();
    const ids = (await leases.items.query<{ id: string }>("SELECT c.id FROM c").fetchAll()).resources;
    const info = ids.find((d) => d.id.endsWith(".info")) as { id: string };
    await leases.item(info.id, info.id).delete();
    const lockId = info.id.replace(/\.info$/, ".lock");
    // A lock that never expires (the container's default TTL is -1): only stop() can end the start's wait.
    await leases.items.create({ id: lockId });
    const p = host(monitored, leases, "waiting", async () => {});
    let isSettled = false;
    const started = p.start().finally(() => {
      isSettled = true;
    });
    await delay(300);
    expect(isSettled).toBe(false);
    await settled("stop()", p.stop());
    await settled("start() to settle after stop()", started);
    expect(p.ownedLeaseTokens()).toEqual([]);
  });

  it("stop({ abortSignal }) cuts the hand-off wait short and releases what it still holds", async () => {
    const { monitored, leases } = await containers(2);
    // The successor is alive (it renews its lease) but balances only once a minute: it never takes the hand-off.
    const slow = host(monitored, leases, "slow-successor", async () => {}, {
      leaseAcquireInterval: 60_000,
      leaseWatchInterval: 0,
    });
    await slow.start();
    // A handoff timeout no test outlives: the stop can only end because its abortSignal fired.
    const leaving = host(monitored, leases, "leaving", async () => {}, {
      handoffTimeout: 3_600_000,
      leaseWatchInterval: 0,
    });
    await leaving.start();
    await waitUntil("leaving steals one lease", () => leaving.ownedLeaseTokens().length === 1);
    const abort = new AbortController();
    let stoppedYet = false;
    const stopped = leaving.stop({ abortSignal: abort.signal }).finally(() => {
      stoppedYet = true;
    });
    await delay(200);
    expect(stoppedYet).toBe(false); // waiting for the hand-off nobody takes
    abort.abort();
    await settled("stop() after its abortSignal fired", stopped);
    expect((await leaseDocs(leases)).filter((d) => d.Owner === "leaving")).toEqual([]);
  });
});

describe("events", () => {
  it("contains listeners that throw (no unhandled rejection) and fires lost once per loss", async () => {
    const { monitored, leases } = await containers(2);
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      const lost: string[] = [];
      // Only the steal may take a lease here: with FAST's 1.5 s expiration a loaded machine can stall the victim's
      // renewals past it, and the thief then takes an expired lease too (two losses, one steal). A long expiration
      // leaves the steal, which the balancer does at once whatever the expiration, as the one loss to count.
      const stealOnly = { leaseExpirationInterval: 120_000, leaseSafetyMargin: 200 };
      const victim = host(monitored, leases, "victim", async () => {}, stealOnly);
      victim.on("acquired", () => {
        throw new Error("listener bug (acquired)");
      });
      victim.on("lost", (token) => {
        lost.push(token);
        throw new Error("listener bug (lost)");
      });
      victim.on("error", () => {
        throw new Error("listener bug (error)");
      });
      await victim.start();
      await waitUntil("victim owns 2", () => victim.ownedLeaseTokens().length === 2);
      const writing = (async () => {
        for (let i = 0; i < 60; i++) await monitored.items.create<Doc>({ id: `w${i}`, pk: `k${i}` });
      })();
      const thief = host(monitored, leases, "thief", async () => {}, stealOnly);
      await thief.start();
      await waitUntil("thief steals one", () => thief.ownedLeaseTokens().length === 1);
      await writing;
      await waitUntil("the victim to see the steal", () => lost.length > 0);
      expect(lost).toEqual(thief.ownedLeaseTokens());
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});

describe("bootstrap", () => {
  it("creates a lease for the part of a range that an existing lease does not cover", async () => {
    const { monitored, leases } = await containers(1);
    // Bootstrap once to learn the prefix, then leave a lease for part of the only range, uninitialized. (Hash v2
    // EPKs lie below "40", so "20" splits the keys about in half.)
    const probe = host(monitored, leases, "probe", async () => {});
    await probe.start();
    await probe.abandon();
    const all = (await leases.items.query<{ id: string }>("SELECT c.id FROM c").fetchAll()).resources;
    for (const d of all) await leases.item(d.id, d.id).delete();
    const prefix = (all.find((d) => d.id.endsWith("..0")) as { id: string }).id.slice(0, -"..0".length);
    await leases.items.create({
      id: `${prefix}..-20`,
      version: 1,
      LeaseToken: "-20",
      FeedRange: { Range: { min: "", max: "20" } },
      Owner: null,
      ContinuationToken: null,
      properties: {},
      timestamp: new Date().toISOString(),
    });
    for (let i = 0; i < 30; i++) await monitored.items.create<Doc>({ id: `b${i}`, pk: `key-${i}` });
    const seen = new Set<string>();
    let deliveries = 0;
    const p = host(monitored, leases, "bootstrapper", async (docs) => {
      for (const d of docs) seen.add(d.id);
      deliveries += docs.length;
    });
    await p.start();
    await waitUntil("all 30 documents, both parts of the range", () => seen.size === 30);
    await delay(300);
    expect(deliveries).toBe(30);
    const tokens = (
      await leases.items
        .query<{ LeaseToken: string }>("SELECT c.LeaseToken FROM c WHERE IS_DEFINED(c.LeaseToken)")
        .fetchAll()
    ).resources.map((r) => r.LeaseToken);
    expect(tokens.sort()).toEqual(["-20", "20-FF"]);
  });
});

describe("lease container checks", () => {
  it("refuses a lease container with TTL off (a crashed bootstrap's lock would never expire), unless told not to check", async () => {
    const { monitored } = await containers(1);
    const { container: noTtl } = await db.containers.create({
      id: uniqueName("leases-no-ttl"),
      partitionKey: { paths: ["/id"] },
    });
    const refused = host(monitored, noTtl, "strict", async () => {});
    const error = await refused.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LeaseContainerError);
    expect(error).toBeInstanceOf(CosmosFeedError);
    expect((error as LeaseContainerError).message).toContain("TTL off");
    expect((await noTtl.items.readAll().fetchAll()).resources).toEqual([]);

    const seen: string[] = [];
    await monitored.items.create<Doc>({ id: "x", pk: "k" });
    const lenient = host(
      monitored,
      noTtl,
      "lenient",
      async (docs) => {
        seen.push(...docs.map((d) => d.id));
      },
      { checkLeaseContainerTtl: false },
    );
    await lenient.start();
    await waitUntil("the document, with the check turned off", () => seen.includes("x"));
  });
});
