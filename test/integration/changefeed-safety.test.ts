/**
 * The processor's safety defects of issue 9, against the emulator through the real SDK (real timers). Faults
 * the emulator cannot be asked for (a 503 on a lease write, a slow write, a refused continuation) are injected
 * into the SDK's request pipeline (test/support/faults.ts); everything else is real.
 */
import type { Container, CosmosClient, Database } from "@azure/cosmos";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LeaseContainerError } from "../../src/shared/changefeed/leases/open.js";
import { MonitoredContainerGoneError } from "../../src/shared/changefeed/processing/feed-errors.js";
import {
  type ChangeFeedContext,
  type ChangeFeedProcessor,
  createChangeFeedProcessor,
} from "../../src/shared/changefeed/processor.js";
import { CosmosFeedError } from "../../src/shared/errors.js";
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

async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
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
  it("aborts ctx.signal and reports the lease lost (expired) before it expires for others when lease writes fail with 503", async () => {
    const { monitored, leases } = await containers(1);
    let failWrites = false;
    let lastGoodWrite = 0;
    const signals: AbortSignal[] = [];
    const lost: [string, string, number][] = [];
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
          const sentAt = Date.now();
          const res = await send();
          lastGoodWrite = sentAt;
          return res;
        },
      },
    );
    p.on("error", () => {});
    p.on("lost", (token, reason) => lost.push([token, reason, Date.now()]));
    await p.start();
    await monitored.items.create<Doc>({ id: "a", pk: "a" });
    await waitFor(() => signals.length === 1, 5_000, "the handler holding a batch");
    failWrites = true;
    await waitFor(() => signals[0].aborted, 3_000, "ctx.signal after the renewals failed");
    const abortedAt = Date.now();
    expect(lost.map(([token, reason]) => [token, reason])).toEqual([["0", "expired"]]);
    expect(abortedAt).toBeLessThan(lastGoodWrite + FAST.leaseExpirationInterval);
    expect(p.ownedLeaseTokens()).toEqual([]);
  });

  it("renews leases in parallel: one slow lease write does not let the others expire", async () => {
    const { monitored, leases } = await containers(4);
    let slowed = false;
    const p = host(
      monitored,
      leases,
      "parallel",
      async () => {},
      {},
      {
        match: (ctx) => slowed && ctx.method === "PUT" && pathOf(ctx).endsWith("..0"),
        run: async (_ctx, send) => {
          await delay(5_000);
          return send();
        },
      },
    );
    p.on("error", () => {});
    await p.start();
    await waitFor(() => p.ownedLeaseTokens().length === 4, 5_000, "4 leases owned");
    slowed = true;
    // Lease 0's renewal is due within ~1.3 s; whenever it starts, its write hangs for 5 s.
    await delay(4_000);
    const now = Date.now();
    const others = (await leaseDocs(leases)).filter((d) => !d.id.endsWith("..0"));
    expect(others).toHaveLength(3);
    for (const d of others) {
      expect(d.Owner).toBe("parallel");
      expect(now - Date.parse(d.timestamp)).toBeLessThan(FAST.leaseExpirationInterval);
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
    await waitFor(() => reads > 0, 5_000, "the first feed read");
    await monitored.delete();
    await waitFor(() => lost.length > 0, 5_000, "the lease closed");
    expect(lost).toEqual(["container-gone"]);
    const gone = errors.find((e) => e instanceof MonitoredContainerGoneError) as MonitoredContainerGoneError;
    expect(gone?.statusCode).toBe(404);
    const readsThen = reads;
    await delay(1_000);
    expect(reads - readsThen).toBeLessThanOrEqual(1);
    expect(p.ownedLeaseTokens()).toEqual([]);
  });

  it("backs off on a refused continuation (400) instead of retrying at the poll interval", async () => {
    const { monitored, leases } = await containers(1);
    let refused = 0;
    const p = host(
      monitored,
      leases,
      "refused",
      async () => {},
      {},
      {
        match: (ctx) => ctx.method === "GET" && pathOf(ctx).endsWith(`/colls/${monitored.id}/docs`),
        run: async () => {
          refused++;
          throw serviceError(400, "invalid continuation token");
        },
      },
    );
    p.on("error", () => {});
    await p.start();
    await waitFor(() => refused > 0, 5_000, "the first refused read");
    await delay(1_500);
    // At the 50 ms poll interval this would be ~30 reads; the backoff starts at 0.5–1 s and doubles.
    expect(refused).toBeLessThanOrEqual(4);
  });
});

describe("lifecycle", () => {
  it("stop() during start() stops: no lease stays owned and nothing is taken afterwards", async () => {
    const { monitored, leases } = await containers(2);
    const p = host(monitored, leases, "hasty", async () => {});
    const started = p.start();
    await delay(5);
    await p.stop();
    await started;
    await delay(FAST.leaseAcquireInterval * 3);
    expect(p.ownedLeaseTokens()).toEqual([]);
    for (const d of await leaseDocs(leases)) expect(d.Owner).toBeNull();
  });

  it("stop() interrupts a start waiting for another host's bootstrap lock", async () => {
    const { monitored, leases } = await containers(1);
    // Another host's bootstrap lock (whichever prefix: lock ids end in ".lock"), held for its 30 s TTL.
    const probe = host(monitored, leases, "probe", async () => {});
    await probe.start();
    await probe.abandon();
    const ids = (await leases.items.query<{ id: string }>("SELECT c.id FROM c").fetchAll()).resources;
    const info = ids.find((d) => d.id.endsWith(".info")) as { id: string };
    await leases.item(info.id, info.id).delete();
    const lockId = info.id.replace(/\.info$/, ".lock");
    await leases.items.create({ id: lockId, ttl: 30 });
    const p = host(monitored, leases, "waiting", async () => {});
    let settled = false;
    const started = p.start().finally(() => {
      settled = true;
    });
    await delay(300);
    expect(settled).toBe(false);
    const stopAt = Date.now();
    await p.stop();
    await waitFor(() => settled, 2_000, "start() to settle after stop()");
    await started;
    expect(Date.now() - stopAt).toBeLessThan(2_000);
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
    const leaving = host(monitored, leases, "leaving", async () => {}, {
      handoffTimeout: 20_000,
      leaseWatchInterval: 0,
    });
    await leaving.start();
    await waitFor(() => leaving.ownedLeaseTokens().length === 1, 5_000, "leaving steals one lease");
    const abort = new AbortController();
    const stopAt = Date.now();
    setTimeout(() => abort.abort(), 200);
    const stopped = leaving.stop({ abortSignal: abort.signal });
    const outcome = await Promise.race([
      stopped.then(() => "stopped"),
      delay(4_000).then(() => "still waiting"),
    ]);
    expect(outcome).toBe("stopped");
    expect(Date.now() - stopAt).toBeLessThan(2_000);
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
      const victim = host(monitored, leases, "victim", async () => {});
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
      await waitFor(() => victim.ownedLeaseTokens().length === 2, 5_000, "victim owns 2");
      const writing = (async () => {
        for (let i = 0; i < 60; i++) await monitored.items.create<Doc>({ id: `w${i}`, pk: `k${i}` });
      })();
      const thief = host(monitored, leases, "thief", async () => {});
      await thief.start();
      await waitFor(() => thief.ownedLeaseTokens().length === 1, 5_000, "thief steals one");
      await writing;
      await delay(FAST.leaseAcquireInterval * 3);
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
    await waitFor(() => seen.size === 30, 5_000, "all 30 documents, both parts of the range");
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
    await waitFor(() => seen.includes("x"), 5_000, "the document, with the check turned off");
  });
});
