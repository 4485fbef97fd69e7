import type { Container, CosmosClient, Database } from "@azure/cosmos";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { estimateLag } from "../../src/shared/changefeed/estimator.js";
import { InvalidProcessorOptionsError } from "../../src/shared/changefeed/options.js";
import {
  type ChangeFeedContext,
  type ChangeFeedProcessor,
  createChangeFeedProcessor,
} from "../../src/shared/changefeed/processor.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { FAST_INTERVALS, processorContainers } from "../support/processor-containers.js";

interface Doc {
  id: string;
  pk: string;
  n: number;
  _lsn?: number;
}

const FAST = FAST_INTERVALS;

let t: TestEmulator;
let db: Database;
const running: ChangeFeedProcessor<Doc>[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("cfp") })).database;
});
afterEach(async () => {
  await Promise.allSettled(running.splice(0).map((p) => p.stop()));
});
afterAll(async () => {
  await t.close();
});

const containers = (ranges: number) => processorContainers(db, ranges);

/** A host: its own client (own caches), like a separate process. */
function host(
  monitored: Container,
  leases: Container,
  name: string,
  handler: (docs: Doc[], ctx: ChangeFeedContext) => Promise<void>,
  extra: Partial<Parameters<typeof createChangeFeedProcessor>[0]> = {},
): ChangeFeedProcessor<Doc> {
  const client: CosmosClient = t.newClient();
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

async function waitFor(
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Writes a document every ~10 ms until stopped, recording when each was written. */
function startWriter(c: Container, idPrefix: string, keys: number) {
  const writtenAt = new Map<string, number>();
  let stopping = false;
  const running = (async () => {
    for (let i = 0; !stopping; i++) {
      await c.items.create<Doc>({ id: `${idPrefix}${i}`, pk: `k${i % keys}`, n: i });
      writtenAt.set(`${idPrefix}${i}`, Date.now());
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    writtenAt,
    stop: async () => {
      stopping = true;
      await running;
    },
  };
}

/** The longest write → first-handled time over the written documents (all must have been handled). */
function worstLatency(writtenAt: Map<string, number>, handledAt: Map<string, number>): number {
  return Math.max(...[...writtenAt].map(([id, at]) => (handledAt.get(id) as number) - at));
}

async function writeDocs(c: Container, from: number, count: number, keys = 13): Promise<void> {
  for (let i = from; i < from + count; i++)
    await c.items.create<Doc>({ id: `d${i}`, pk: `p${i % keys}`, n: i });
}

describe("lease documents", () => {
  it("bootstraps .NET-shaped leases: prefix..token ids, the .NET field set, .info written and .lock removed", async () => {
    const { monitored, leases } = await containers(4);
    const p = host(monitored, leases, "host-a", async () => {}, { leaseContainerPrefix: "proc1" });
    await p.start();
    const { resources } = await leases.items.query<Record<string, unknown>>("SELECT * FROM c").fetchAll();
    const collRid = (await monitored.read()).resource?._rid as string;
    // The database's own _rid, as the service reports it (not derived from the container rid like the code is).
    const dbRid = (await db.read()).resource?._rid as string;
    const prefix = `proc1127.0.0.1_${dbRid}_${collRid}`;
    const leaseDocs = resources.filter((d) => String(d.id).includes(".."));
    expect(leaseDocs.map((d) => d.id).sort()).toEqual([0, 1, 2, 3].map((i) => `${prefix}..${i}`));
    expect(resources.some((d) => d.id === `${prefix}.info`)).toBe(true);
    expect(resources.some((d) => d.id === `${prefix}.lock`)).toBe(false);
    const userKeys = Object.keys(leaseDocs[0]).filter(
      (k) => !["_rid", "_self", "_attachments", "_ts", "_etag"].includes(k),
    );
    expect(userKeys).toEqual([
      "id",
      "version",
      "LeaseToken",
      "FeedRange",
      "Owner",
      "ContinuationToken",
      "properties",
      "timestamp",
      "Mode",
    ]);
    const lease0 = leaseDocs.find((d) => d.LeaseToken === "0") as Record<string, unknown>;
    expect(lease0.version).toBe(0);
    expect(lease0.Mode).toBe("Incremental Feed");
    expect(lease0.Owner).toBe("host-a");
    expect(lease0.FeedRange).toEqual({ Range: { min: "", max: "10" } });
    expect(typeof lease0.timestamp).toBe("string");
    expect(lease0.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it("works with a lease container partitioned by /partitionKey (partitionKey = id, as .NET >= 3.59)", async () => {
    const { monitored } = await containers(2);
    const { container: leases } = await db.containers.create({
      id: uniqueName("pkleases"),
      partitionKey: { paths: ["/partitionKey"] },
      defaultTtl: -1,
    });
    await writeDocs(monitored, 0, 20);
    const seen = new Set<string>();
    const p = host(monitored, leases, "pk-host", async (docs) => {
      for (const d of docs) seen.add(d.id);
    });
    await p.start();
    await waitFor(() => seen.size === 20, 10_000, "20 documents");
    await p.stop();
    const { resources } = await leases.items.query<Record<string, unknown>>("SELECT * FROM c").fetchAll();
    expect(resources.length).toBe(3); // two leases and .info
    for (const d of resources) expect(d.partitionKey).toBe(d.id);
    const lease = resources.find((d) => d.LeaseToken === "0") as Record<string, unknown>;
    expect(Object.keys(lease).slice(0, 3)).toEqual(["id", "partitionKey", "version"]);
    expect(lease.ContinuationToken).toMatch(/^"\d+"$/);
  });

  it("rejects invalid option combinations at construction", () => {
    const fake = {} as Container;
    expect(() =>
      createChangeFeedProcessor(
        { monitoredContainer: fake, leaseContainer: fake, leaseRenewInterval: 60_000 },
        async () => {},
      ),
    ).toThrow(InvalidProcessorOptionsError);
    expect(() =>
      createChangeFeedProcessor(
        {
          monitoredContainer: fake,
          leaseContainer: fake,
          startFromBeginning: true,
          startFromTime: new Date(),
        },
        async () => {},
      ),
    ).toThrow(/not both/);
    expect(() =>
      createChangeFeedProcessor(
        { monitoredContainer: fake, leaseContainer: fake, feedPollDelay: -1 },
        async () => {},
      ),
    ).toThrow(/feedPollDelay/);
  });

  it("refuses a lease container partitioned by anything but /id or /partitionKey", async () => {
    const { monitored } = await containers(1);
    const { container: bad } = await db.containers.create({
      id: uniqueName("badleases"),
      partitionKey: "/owner",
    });
    const p = host(monitored, bad, "h", async () => {});
    await expect(p.start()).rejects.toThrow(/\/id or \/partitionKey/);
  });
});

describe("processing", () => {
  it("delivers every document once and checkpoints the raw etag of each page", async () => {
    const { monitored, leases } = await containers(4);
    await writeDocs(monitored, 0, 120);
    const seen: string[] = [];
    const p = host(monitored, leases, "solo", async (docs) => {
      seen.push(...docs.map((d) => d.id));
    });
    await p.start();
    await waitFor(() => seen.length >= 120, 10_000, "120 documents");
    await writeDocs(monitored, 120, 30);
    await waitFor(() => seen.length >= 150, 10_000, "150 documents");
    expect(new Set(seen).size).toBe(150);
    await p.stop();
    const { resources } = await leases.items
      .query<{ ContinuationToken: string | null; Owner: string | null }>(
        "SELECT * FROM c WHERE IS_DEFINED(c.LeaseToken)",
      )
      .fetchAll();
    expect(resources.length).toBe(4);
    for (const l of resources) {
      expect(l.ContinuationToken).toMatch(/^"\d+"$/);
      expect(l.Owner).toBeNull();
    }
  });

  it("keeps per-partition-key order", async () => {
    const { monitored, leases } = await containers(2);
    const lastByKey = new Map<string, number>();
    let violations = 0;
    let count = 0;
    const p = host(monitored, leases, "order", async (docs) => {
      for (const d of docs) {
        if ((lastByKey.get(d.pk) ?? -1) > d.n) violations++;
        lastByKey.set(d.pk, d.n);
        count++;
      }
    });
    await p.start();
    await writeDocs(monitored, 0, 200, 5);
    await waitFor(() => count >= 200, 10_000, "200 documents");
    expect(violations).toBe(0);
  });

  it("retries a failing batch without checkpointing it, then moves on once it succeeds", async () => {
    const { monitored, leases } = await containers(1);
    await writeDocs(monitored, 0, 5);
    let attempts = 0;
    const delivered: string[] = [];
    const p = host(
      monitored,
      leases,
      "retry",
      async (docs, ctx) => {
        attempts = Math.max(attempts, ctx.attempt);
        if (ctx.attempt < 3) throw new Error("transient");
        delivered.push(...docs.map((d) => d.id));
      },
      { errorPolicy: { kind: "retry", initialDelay: 20, maxDelay: 50 } },
    );
    await p.start();
    await waitFor(() => delivered.length >= 5, 10_000, "delivery after retries");
    expect(attempts).toBe(3);
    expect(delivered.sort()).toEqual(["d0", "d1", "d2", "d3", "d4"]);
  });

  it("writes a batch that keeps failing to the dead-letter container and continues", async () => {
    const { monitored, leases } = await containers(1);
    const { container: dlq } = await db.containers.create({ id: uniqueName("dlq"), partitionKey: "/id" });
    await monitored.items.create<Doc>({ id: "poison", pk: "a", n: 0 });
    const delivered: string[] = [];
    const deadLettered: number[] = [];
    const p = host(
      monitored,
      leases,
      "dlq",
      async (docs) => {
        if (docs.some((d) => d.id === "poison")) throw new Error("cannot handle poison");
        delivered.push(...docs.map((d) => d.id));
      },
      { errorPolicy: { kind: "deadLetter", container: dlq, maxAttempts: 3, initialDelay: 10, maxDelay: 20 } },
    );
    p.on("deadLettered", (_token, n) => deadLettered.push(n));
    await p.start();
    await waitFor(() => deadLettered.length > 0, 10_000, "dead-lettering");
    await monitored.items.create<Doc>({ id: "fine", pk: "a", n: 1 });
    await waitFor(() => delivered.includes("fine"), 10_000, "the next document");
    const { resources } = await dlq.items
      .query<{ sourceId: string; attempts: number; error: string }>("SELECT * FROM c")
      .fetchAll();
    expect(resources.map((r) => r.sourceId)).toEqual(["poison"]);
    expect(resources[0].attempts).toBe(3);
    expect(resources[0].error).toContain("poison");
  });
});

describe("balancing", () => {
  async function owners(leases: Container): Promise<Map<string, number>> {
    const { resources } = await leases.items
      .query<{ Owner: string | null }>("SELECT c.Owner FROM c WHERE IS_DEFINED(c.LeaseToken)")
      .fetchAll();
    const m = new Map<string, number>();
    for (const r of resources) if (r.Owner) m.set(r.Owner, (m.get(r.Owner) ?? 0) + 1);
    return m;
  }

  it("converges 1 → 3 → 1 hosts evenly over 8 leases", async () => {
    const { monitored, leases } = await containers(8);
    const a = host(monitored, leases, "a", async () => {});
    await a.start();
    await waitFor(async () => a.ownedLeaseTokens().length === 8, 10_000, "a owns 8");
    const b = host(monitored, leases, "b", async () => {});
    const c = host(monitored, leases, "c", async () => {});
    await Promise.all([b.start(), c.start()]);
    await waitFor(
      async () => {
        const counts = [...(await owners(leases)).values()].sort();
        return counts.join(",") === "2,3,3";
      },
      15_000,
      "3/3/2",
    );
    await Promise.all([b.stop(), c.stop()]);
    await waitFor(async () => (await owners(leases)).get("a") === 8, 10_000, "a owns 8 again");
    expect(a.ownedLeaseTokens().length).toBe(8);
  });

  it("takes over the leases of a host that stopped without releasing once they expire", async () => {
    const { monitored, leases } = await containers(2);
    const a = host(monitored, leases, "crashy", async () => {});
    await a.start();
    await waitFor(() => a.ownedLeaseTokens().length === 2, 10_000, "crashy owns 2");
    await a.abandon();
    const b = host(monitored, leases, "survivor", async () => {});
    const started = Date.now();
    await b.start();
    await waitFor(() => b.ownedLeaseTokens().length === 2, 10_000, "survivor owns 2");
    // Not before expiry: the abandoned leases were fresh.
    expect(Date.now() - started).toBeGreaterThanOrEqual(
      FAST.leaseExpirationInterval - FAST.leaseRenewInterval * 3,
    );
  });

  it("fires the victim's AbortSignal when a lease is stolen", async () => {
    const { monitored, leases } = await containers(2);
    const signals = new Map<string, AbortSignal>();
    const a = host(monitored, leases, "victim", async (_docs, ctx) => {
      signals.set(ctx.leaseToken, ctx.signal);
      // Hold the batch until the lease is lost.
      await new Promise<void>((resolve) =>
        ctx.signal.addEventListener("abort", () => resolve(), { once: true }),
      );
    });
    await a.start();
    await writeDocs(monitored, 0, 40, 40);
    await waitFor(() => signals.size === 2, 10_000, "both leases busy");
    const b = host(monitored, leases, "thief", async () => {});
    await b.start();
    await waitFor(() => b.ownedLeaseTokens().length === 1, 10_000, "thief steals one");
    const stolen = b.ownedLeaseTokens()[0];
    await waitFor(() => signals.get(stolen)?.aborted === true, 5_000, "victim's signal");
    const kept = [...signals.keys()].find((k) => k !== stolen) as string;
    expect(signals.get(kept)?.aborted).toBe(false);
  });

  it("hands off on graceful stop without pausing the feed", async () => {
    const { monitored, leases } = await containers(4);
    const handledAt = new Map<string, number>();
    const handler = async (docs: Doc[]) => {
      for (const d of docs) if (!handledAt.has(d.id)) handledAt.set(d.id, Date.now());
    };
    const a = host(monitored, leases, "leaving", handler, { handoffTimeout: 5_000 });
    const b = host(monitored, leases, "staying", handler, { handoffTimeout: 5_000 });
    await a.start();
    await b.start();
    await waitFor(
      () => a.ownedLeaseTokens().length === 2 && b.ownedLeaseTokens().length === 2,
      10_000,
      "2/2",
    );
    const writer = startWriter(monitored, "h", 31);
    const { writtenAt } = writer;
    await new Promise((r) => setTimeout(r, 300));
    const stopAt = Date.now();
    await a.stop();
    const handoffMs = Date.now() - stopAt;
    await new Promise((r) => setTimeout(r, 300));
    await writer.stop();
    await waitFor(() => [...writtenAt.keys()].every((id) => handledAt.has(id)), 5_000, "all handled");
    expect(b.ownedLeaseTokens().length).toBe(4);
    expect(handoffMs).toBeLessThan(FAST.leaseAcquireInterval + 2_000);
    expect(worstLatency(writtenAt, handledAt)).toBeLessThan(1_000);
  });
});

describe("hand-off through the lease container's change feed", () => {
  it("has released leases taken by chosen successors in under 1 s, balanced, with no pause", async () => {
    const ranges = 6;
    const { monitored, leases } = await containers(ranges);
    // 500 ms watch slots; balancing rounds 2 s apart (> 3 hosts × 500 ms), so a balancing round cannot explain
    // a pickup under 1 s: only the watch can. (bench/ measures the default 1 s slot.)
    const slow = {
      leaseWatchInterval: 500,
      leaseRenewInterval: 3_000,
      leaseAcquireInterval: 2_000,
      leaseExpirationInterval: 20_000,
      feedPollDelay: 50,
      handoffTimeout: 8_000,
    };
    const handledAt = new Map<string, number>();
    const handler = async (docs: Doc[]) => {
      for (const d of docs) if (!handledAt.has(d.id)) handledAt.set(d.id, Date.now());
    };
    const hosts = ["h-a", "h-b", "h-c"].map((n) => host(monitored, leases, n, handler, slow));
    const [a, b, c] = hosts;
    const releasedAt = new Map<string, number>();
    const acquiredAt = new Map<string, number>();
    a.on("released", (token) => releasedAt.set(token, Date.now()));
    for (const s of [b, c]) s.on("acquired", (token) => acquiredAt.set(token, Date.now()));
    await a.start(); // bootstraps alone (the others would wait for its .lock), then b and c steal to 2/2/2
    await Promise.all([b.start(), c.start()]);
    await waitFor(() => hosts.every((h) => h.ownedLeaseTokens().length === 2), 40_000, "2/2/2");
    const leaving = a.ownedLeaseTokens();
    acquiredAt.clear();

    const writer = startWriter(monitored, "w", 29);
    const { writtenAt } = writer;
    await new Promise((r) => setTimeout(r, 500));
    const stopAt = Date.now();
    await a.stop();
    const stopMs = Date.now() - stopAt;
    await new Promise((r) => setTimeout(r, 300));
    await writer.stop();
    await waitFor(() => [...writtenAt.keys()].every((id) => handledAt.has(id)), 10_000, "all handled");

    // Each released lease was taken by a survivor less than a second after its release.
    expect([...releasedAt.keys()].sort()).toEqual([...leaving].sort());
    for (const token of leaving) {
      const taken = acquiredAt.get(token);
      expect(taken, `lease ${token} taken`).toBeDefined();
      expect((taken as number) - (releasedAt.get(token) as number)).toBeLessThan(1_000);
    }
    // Chosen successors: the survivors end balanced without a steal, and the hint is gone from the documents.
    expect(b.ownedLeaseTokens().length).toBe(3);
    expect(c.ownedLeaseTokens().length).toBe(3);
    // Released just before a successor's next slot: at most one round of the 3 slots, plus the pickup and the
    // drain's check interval (far below the 8 s handoffTimeout it would otherwise wait).
    expect(stopMs).toBeLessThan(3 * 500 + 2_000);
    const { resources } = await leases.items
      .query<{ Owner: string | null; properties: Record<string, string> }>(
        "SELECT c.Owner, c.properties FROM c WHERE IS_DEFINED(c.LeaseToken)",
      )
      .fetchAll();
    expect(resources.filter((r) => r.properties.handoffTo !== undefined)).toEqual([]);
    expect(new Set(resources.map((r) => r.Owner))).toEqual(new Set(["h-b", "h-c"]));
    // The feed never paused: the stopping host processed its leases until the successors took them.
    expect(worstLatency(writtenAt, handledAt)).toBeLessThan(1_000);
  }, 90_000);
});

describe("whole-app shutdown", () => {
  it("does not wait for the handoff timeout when every host stops at once, and leaves every lease released", async () => {
    const { monitored, leases } = await containers(4);
    const opts = { handoffTimeout: 20_000, leaseWatchInterval: 100 };
    const a = host(monitored, leases, "down-a", async () => {}, opts);
    const b = host(monitored, leases, "down-b", async () => {}, opts);
    await a.start();
    await b.start();
    await waitFor(
      () => a.ownedLeaseTokens().length === 2 && b.ownedLeaseTokens().length === 2,
      10_000,
      "2/2",
    );
    const t0 = Date.now();
    await Promise.all([a.stop(), b.stop()]);
    // Each hands its leases to the other, sees the other release everything, and stops draining.
    expect(Date.now() - t0).toBeLessThan(5_000);
    const { resources } = await leases.items
      .query<{ Owner: string | null }>("SELECT c.Owner FROM c WHERE IS_DEFINED(c.LeaseToken)")
      .fetchAll();
    expect(resources.map((r) => r.Owner)).toEqual([null, null, null, null]);
    // A host started right after takes them all at once: a hand-off to a host that is gone holds nothing back.
    const next = host(monitored, leases, "up-c", async () => {}, { ...opts, leaseAcquireInterval: 60_000 });
    await next.start();
    expect(next.ownedLeaseTokens().length).toBe(4);
  });
});

describe("splits and .NET leases", () => {
  it("replaces a lease by its children on a live split and loses nothing", async () => {
    const { monitored, leases } = await containers(2);
    const seen = new Set<string>();
    const splits: string[][] = [];
    const p = host(monitored, leases, "splitter", async (docs) => {
      for (const d of docs) seen.add(d.id);
    });
    p.on("split", (parent, children) => splits.push([parent, ...children]));
    await p.start();
    await writeDocs(monitored, 0, 100);
    await waitFor(() => seen.size >= 50, 10_000, "some documents");
    t.emulator.splitRange(db.id, monitored.id, "0");
    await writeDocs(monitored, 100, 100);
    await waitFor(() => seen.size >= 200, 15_000, "200 documents");
    expect(splits).toEqual([["0", "2", "3"]]);
    const { resources } = await leases.items
      .query<{ LeaseToken: string; FeedRange: unknown }>(
        "SELECT c.LeaseToken, c.FeedRange FROM c WHERE IS_DEFINED(c.LeaseToken)",
      )
      .fetchAll();
    expect(resources.map((r) => r.LeaseToken).sort()).toEqual(["1", "2", "3"]);
  });

  it("turns version-0 leases into version-1 EPK leases when their partitions merge, and loses nothing", async () => {
    const { monitored, leases } = await containers(2);
    const deliveries = new Map<string, number>();
    const merges: [string, string][] = [];
    const p = host(monitored, leases, "merger", async (docs) => {
      for (const d of docs) deliveries.set(d.id, (deliveries.get(d.id) ?? 0) + 1);
    });
    p.on("merged", (from, to) => merges.push([from, to]));
    await p.start();
    const ranges = (await monitored.readPartitionKeyRanges().fetchAll()).resources;
    await writeDocs(monitored, 0, 100);
    await waitFor(() => deliveries.size >= 100, 10_000, "the first 100 documents");
    const mergedId = t.emulator.mergeRanges(db.id, monitored.id, "0", "1");
    await writeDocs(monitored, 100, 100);
    await waitFor(() => deliveries.size >= 200 && merges.length === 2, 15_000, "200 documents and 2 merges");
    // Each document exactly once: the old lease's last checkpoint is where the new lease starts.
    expect([...deliveries.values()].every((n) => n === 1)).toBe(true);
    const epkToken = (r: { minInclusive: string; maxExclusive: string }) =>
      `${r.minInclusive}-${r.maxExclusive}`;
    expect(merges.sort()).toEqual([
      ["0", epkToken(ranges[0])],
      ["1", epkToken(ranges[1])],
    ]);
    const { resources } = await leases.items
      .query<{ LeaseToken: string; version: number; FeedRange: { Range: { min: string; max: string } } }>(
        "SELECT c.LeaseToken, c.version, c.FeedRange FROM c WHERE IS_DEFINED(c.LeaseToken)",
      )
      .fetchAll();
    expect(resources.map((r) => [r.version, r.LeaseToken]).sort()).toEqual(
      ranges.map((r) => [1, epkToken(r)]).sort(),
    );
    expect(mergedId).toBe("2");
    expect(p.ownedLeaseTokens().sort()).toEqual(ranges.map(epkToken).sort());
  });

  it("adopts leases written by .NET (version 0, version 1 EPK, legacy PartitionId) and continues from their continuation", async () => {
    const { monitored, leases } = await containers(2);
    await writeDocs(monitored, 0, 60);
    const collRid = (await monitored.read()).resource?._rid as string;
    // The database's own _rid, as the service reports it (not derived from the container rid like the code is).
    const dbRid = (await db.read()).resource?._rid as string;
    const prefix = `127.0.0.1_${dbRid}_${collRid}`;
    // The LSN after the first 60 writes: everything up to it counts as already processed.
    const probe = await monitored.items.getChangeFeedIterator({}).readNext();
    const composite = JSON.parse(probe.continuationToken) as {
      Continuation: { continuationToken: string }[];
    };
    const lsn = Number(composite.Continuation[0].continuationToken.replace(/"/g, ""));
    expect(lsn).toBeGreaterThanOrEqual(60);
    const ranges = (await monitored.readPartitionKeyRanges().fetchAll()).resources;
    const continuation = `"${lsn}"`;
    // Range 0 as a legacy V2-library lease; range 1 as a version-1 EPK lease, both owned by a dead .NET host.
    await leases.items.create({
      id: `${prefix}..0`,
      PartitionId: "0",
      Owner: "dotnet-host",
      ContinuationToken: continuation,
      timestamp: "2020-01-01T00:00:00.1234567Z",
    });
    await leases.items.create({
      id: `${prefix}..${ranges[1].minInclusive}-${ranges[1].maxExclusive}`,
      version: 1,
      _etag: null,
      LeaseToken: `${ranges[1].minInclusive}-${ranges[1].maxExclusive}`,
      FeedRange: { Range: { min: ranges[1].minInclusive, max: ranges[1].maxExclusive } },
      Owner: null,
      ContinuationToken: continuation,
      properties: { custom: "kept" },
      timestamp: "2026-06-28T14:42:40.403196Z",
      _ts: 0,
      Mode: "Incremental Feed",
    });
    await leases.items.create({ id: `${prefix}.info` });
    await writeDocs(monitored, 60, 20);
    const seen: string[] = [];
    const p = host(monitored, leases, "node-host", async (docs) => {
      seen.push(...docs.map((d) => d.id));
    });
    await p.start();
    await waitFor(() => seen.length >= 20, 10_000, "the 20 new documents");
    await new Promise((r) => setTimeout(r, 300));
    expect(seen.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `d${60 + i}`).sort());
    const { resources } = await leases.items
      .query<Record<string, unknown>>("SELECT * FROM c WHERE IS_DEFINED(c.Owner)")
      .fetchAll();
    expect(resources.length).toBe(2);
    for (const l of resources) expect(l.Owner).toBe("node-host");
    const legacy = resources.find((l) => l.id === `${prefix}..0`) as Record<string, unknown>;
    expect(legacy.PartitionId).toBe("0");
    expect(legacy.LeaseToken).toBe("0");
    const epk = resources.find((l) => l.version === 1) as Record<string, unknown>;
    expect(epk.properties).toEqual({ custom: "kept" });
  });
});

describe("estimator", () => {
  it("reports per-lease lag and owner as .NET computes it", async () => {
    const { monitored, leases } = await containers(2);
    await writeDocs(monitored, 0, 30);
    let handled = 0;
    const p = host(monitored, leases, "est", async (docs) => {
      handled += docs.length;
    });
    await p.start();
    await waitFor(() => handled >= 30, 10_000, "30 documents");
    await p.stop();
    const idle = await estimateLag({ monitoredContainer: monitored, leaseContainer: leases });
    expect(idle.map((l) => l.estimatedLag)).toEqual([0, 0]);
    expect(idle.every((l) => l.owner === null)).toBe(true);
    await writeDocs(monitored, 30, 25);
    const behind = await estimateLag({ monitoredContainer: monitored, leaseContainer: leases });
    expect(behind.reduce((s, l) => s + l.estimatedLag, 0)).toBeGreaterThanOrEqual(25);
    expect(behind.every((l) => l.estimatedLag > 0)).toBe(true);
  });
});
