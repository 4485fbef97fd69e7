/**
 * Checkpoint coalescing through the public processor against the emulator (the real SDK over a socket): a
 * backlog drained with the default maxCheckpointDelay costs far fewer lease writes than pages, and every
 * document is checkpointed by the time the feed runs dry; maxCheckpointDelay 0 writes one checkpoint per page.
 */
import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidProcessorOptionsError } from "../../src/shared/changefeed/options.js";
import { createChangeFeedProcessor } from "../../src/shared/changefeed/processor.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

interface Doc {
  id: string;
  pk: string;
}

const DOCS = 600;
const PAGE = 10;

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("cfc") })).database;
});
afterAll(async () => {
  await t.close();
});

async function backlog(): Promise<{ monitored: Container; leases: Container }> {
  // One range, so every page belongs to the same lease and the count of pages is known.
  const { container: monitored } = await db.containers.create({
    id: uniqueName("data"),
    partitionKey: { paths: ["/pk"], version: 2 },
  });
  const { container: leases } = await db.containers.create({
    id: uniqueName("leases"),
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  for (let i = 0; i < DOCS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, j) =>
        monitored.items.create<Doc>({ id: `d${i + j}`, pk: `k${(i + j) % 7}` }),
      ),
    );
  }
  return { monitored, leases };
}

/** Drains the backlog; returns the pages handled and the checkpoints written (documents each covered). */
async function drain(maxCheckpointDelay: number | undefined) {
  const { monitored, leases } = await backlog();
  let handled = 0;
  let pages = 0;
  const checkpoints: number[] = [];
  const p = createChangeFeedProcessor<Doc>(
    {
      monitoredContainer: monitored,
      leaseContainer: leases,
      instanceName: "coalescing-host",
      startFromBeginning: true,
      maxItemsPerInvocation: PAGE,
      feedPollDelay: 50,
      handoffTimeout: 0,
      ...(maxCheckpointDelay === undefined ? {} : { maxCheckpointDelay }),
    },
    async (docs) => {
      handled += docs.length;
      pages++;
    },
  );
  p.on("checkpointed", (_token, _etag, documents) => checkpoints.push(documents));
  await p.start();
  const deadline = Date.now() + 30_000;
  // Done when every document was handled and checkpointed (the feed ran dry, so the held one is written).
  while (checkpoints.reduce((a, b) => a + b, 0) < DOCS) {
    if (Date.now() > deadline) throw new Error(`handled ${handled}, checkpointed ${checkpoints.join(",")}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  await p.stop();
  return { handled, pages, checkpoints };
}

describe("checkpoint coalescing (emulator)", () => {
  it("writes far fewer checkpoints than pages for a backlog, and covers every document once the feed is dry", async () => {
    const r = await drain(undefined);
    expect(r.handled).toBe(DOCS);
    expect(r.pages).toBe(DOCS / PAGE);
    expect(r.checkpoints.reduce((a, b) => a + b, 0)).toBe(DOCS);
    // 60 pages drained in well under maxCheckpointDelay per few pages: a handful of writes, not 60.
    expect(r.checkpoints.length).toBeLessThanOrEqual(r.pages / 4);
  });

  it("with maxCheckpointDelay 0 writes a checkpoint per page (only one in flight at a time merges them)", async () => {
    const r = await drain(0);
    expect(r.handled).toBe(DOCS);
    expect(r.checkpoints.reduce((a, b) => a + b, 0)).toBe(DOCS);
    expect(r.checkpoints.length).toBeGreaterThan(r.pages / 2);
  });

  it("refuses a negative, NaN or infinite maxCheckpointDelay", () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() =>
        createChangeFeedProcessor<Doc>(
          {
            monitoredContainer: db.container("x"),
            leaseContainer: db.container("y"),
            maxCheckpointDelay: bad,
          },
          async () => {},
        ),
      ).toThrow(InvalidProcessorOptionsError);
    }
  });
});
