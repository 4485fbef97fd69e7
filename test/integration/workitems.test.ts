import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConcurrencyConflictError } from "../../packages/core/src/cosmos/errors.js";
import { createItem } from "../../packages/core/src/cosmos/occ.js";
import {
  type WorkItem,
  WorkItemLeasedError,
  WorkItemLeaseLostError,
  WorkItemStore,
} from "../../packages/locks/src/workitems/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { faultPlugins } from "../support/faults.js";

interface Job extends WorkItem {
  tenant: string;
  payload: number;
}

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("work") })).database;
});
afterAll(async () => {
  await t.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function jobs(count: number, ranges = 4): Promise<Container> {
  const { container } = await db.containers.create(
    { id: uniqueName("jobs"), partitionKey: { paths: ["/tenant"], version: 2 } },
    { offerThroughput: ranges * 6_000 },
  );
  const base = Date.now() - 1_000_000;
  for (let i = 0; i < count; i++) {
    await createItem<Job>(container, {
      id: `job-${i}`,
      tenant: `t${i % 7}`,
      payload: i,
      state: "queued",
      stateChangedAt: base + i * 10,
      lease: null,
    });
  }
  return container;
}

const storeFor = (c: Container, owner: string, leaseDurationMs = 60_000) =>
  new WorkItemStore<Job>({
    container: t.newClient().database(db.id).container(c.id),
    owner,
    leaseDurationMs,
    partitionKeyOf: (j) => j.tenant,
  });

describe("work items with embedded leases", () => {
  it("acquire / extend / break, held leases refuse others, expired ones can be taken", async () => {
    const c = await jobs(1);
    const a = storeFor(c, "a", 500);
    const b = storeFor(c, "b", 500);
    const mine = await a.acquire("job-0", "t0");
    expect(mine.lease?.leasedBy).toBe("a");
    await expect(b.acquire("job-0", "t0")).rejects.toBeInstanceOf(WorkItemLeasedError);
    const extended = await a.extend(mine);
    expect(extended.lease?.leasedAt).toBeGreaterThanOrEqual(mine.lease?.leasedAt as number);
    // The pre-extension copy is stale: its etag no longer matches.
    await expect(a.break(mine)).rejects.toBeInstanceOf(WorkItemLeaseLostError);
    const broken = await a.break(extended);
    expect(broken.lease).toBeNull();
    const byB = await b.acquire("job-0", "t0");
    await sleep(600);
    const takenBack = await a.acquire("job-0", "t0");
    expect(takenBack.lease?.leasedBy).toBe("a");
    // b's claim lapsed and was taken: its transition is refused.
    await expect(b.transition(byB, "done")).rejects.toBeInstanceOf(WorkItemLeaseLostError);
    const done = await a.transition(takenBack, "done");
    expect(done.state).toBe("done");
    expect(done.lease).toBeNull();
  });

  it("nextForState claims the oldest items first and skips leased ones", async () => {
    const c = await jobs(20);
    const a = storeFor(c, "a");
    const first = await a.nextForState("queued", 5);
    expect(first.map((j) => j.payload)).toEqual([0, 1, 2, 3, 4]);
    const second = await storeFor(c, "b").nextForState("queued", 5);
    expect(second.map((j) => j.payload)).toEqual([5, 6, 7, 8, 9]);
    await expect(a.nextForState("queued", 0)).rejects.toThrow(RangeError);
  });

  it("8 racing workers never claim one item with overlapping leases, and every item is done", async () => {
    const c = await jobs(120);
    const claims: { id: string; worker: string; from: number; to: number }[] = [];
    const done = new Set<string>();
    const stalled = new Set<string>();
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        // Short leases: some claims lapse (the worker "stalls") and must be re-claimable by others.
        const store = storeFor(c, `w${w}`, 400);
        for (let idle = 0; idle < 5; ) {
          const batch = await store.nextForState("queued", 3);
          if (batch.length === 0) {
            idle++;
            await sleep(150);
            continue;
          }
          idle = 0;
          for (const job of batch) {
            const lease = job.lease as NonNullable<Job["lease"]>;
            claims.push({
              id: job.id,
              worker: `w${w}`,
              from: lease.leasedAt,
              to: lease.leasedAt + lease.leaseDuration,
            });
            // Stall once per item (let the lease lapse, never finish it): stalling on every claim could let the
            // last worker left re-claim its own stalled item forever.
            if ((job.payload + w) % 11 === 0 && !stalled.has(job.id)) {
              stalled.add(job.id);
              continue;
            }
            try {
              await store.transition(job, "done");
              done.add(job.id);
            } catch (e) {
              if (!(e instanceof WorkItemLeaseLostError)) throw e;
            }
          }
        }
      }),
    );
    expect(done.size).toBe(120);
    expect(stalled.size).toBeGreaterThan(0);
    const byItem = new Map<string, typeof claims>();
    for (const cl of claims) byItem.set(cl.id, [...(byItem.get(cl.id) ?? []), cl]);
    for (const [id, list] of byItem) {
      list.sort((x, y) => x.from - y.from);
      for (let i = 1; i < list.length; i++) {
        expect(list[i].from, `${id}: ${list[i - 1].worker} and ${list[i].worker} overlap`).toBeGreaterThan(
          list[i - 1].to,
        );
      }
    }
    const { resources } = await c.items
      .query<number>("SELECT VALUE COUNT(1) FROM c WHERE c.state = 'done'")
      .fetchAll();
    expect(resources[0]).toBe(120);
  });

  it("acquire gives up after the shared policy's attempts when every claim loses its race (was unbounded)", async () => {
    const c = await jobs(1);
    const other = t.newClient().database(db.id).container(c.id);
    let sabotaged = 0;
    // Fault timing, not a fake: just before each of our claims is sent, another writer really changes the item.
    const racing = t.newClient(
      faultPlugins({
        match: (ctx) => ctx.method === "PUT" && (ctx.path ?? "").includes(`/colls/${c.id}/docs/job-0`),
        run: async (_ctx, send) => {
          sabotaged++;
          const { resource } = await other.item("job-0", "t0").read<Job>();
          await other.item("job-0", "t0").replace({ ...(resource as Job), payload: sabotaged });
          return send();
        },
      }),
    );
    const store = new WorkItemStore<Job>({
      container: racing.database(db.id).container(c.id),
      owner: "loser",
      partitionKeyOf: (j) => j.tenant,
    });
    await expect(store.acquire("job-0", "t0")).rejects.toBeInstanceOf(ConcurrencyConflictError);
    expect(sabotaged).toBe(10);
  });
});
