/**
 * Checkpoint coalescing through the public processor against the emulator (the real SDK over a socket): a
 * backlog drained with the default maxCheckpointDelay costs one lease write, once the feed runs dry; with
 * maxCheckpointDelay 0 each page's checkpoint is written at once. The processor's timers run on a fake clock that
 * stands still, so how fast this machine drains the backlog cannot change the count of checkpoints.
 */
import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { InvalidProcessorOptionsError } from "../../packages/changefeed/src/options.js";
import { createChangeFeedProcessor } from "../../packages/changefeed/src/processor.js";
import { FakeClock } from "../../packages/core/src/clock.js";
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

/**
 * Drains the backlog; returns the pages handled and the checkpoints written (documents each covered). With
 * `eachAfterLast`, the handler of a page returns only once the previous page's checkpoint was written, so no two
 * checkpoints are ever in flight together.
 */
async function drain(maxCheckpointDelay: number | undefined, eachAfterLast = false) {
  const { monitored, leases } = await backlog();
  let handled = 0;
  let pages = 0;
  const checkpoints: number[] = [];
  // Time stands still: no renewal, no maxCheckpointDelay timer and no poll delay ever runs out during the drain.
  const clock = new FakeClock(Date.now());
  const p = createChangeFeedProcessor<Doc>(
    {
      monitoredContainer: monitored,
      leaseContainer: leases,
      instanceName: "coalescing-host",
      startFromBeginning: true,
      maxItemsPerInvocation: PAGE,
      feedPollDelay: 50,
      handoffTimeout: 0,
      clock,
      ...(maxCheckpointDelay === undefined ? {} : { maxCheckpointDelay }),
    },
    async (docs) => {
      if (eachAfterLast)
        await waitUntil("the previous page's checkpoint", () => checkpoints.length === pages);
      handled += docs.length;
      pages++;
    },
  );
  p.on("checkpointed", (_token, _etag, documents) => checkpoints.push(documents));
  await p.start();
  // Done when every document was handled and checkpointed (the feed ran dry, so the held one is written).
  await waitUntil(
    `every document checkpointed (handled ${handled})`,
    () => checkpoints.reduce((a, b) => a + b, 0) >= DOCS,
  );
  await p.stop();
  return { handled, pages, checkpoints };
}

describe("checkpoint coalescing (emulator)", () => {
  it("writes one checkpoint for a whole backlog drained within maxCheckpointDelay, once the feed is dry", async () => {
    const r = await drain(undefined);
    expect(r.handled).toBe(DOCS);
    expect(r.pages).toBe(DOCS / PAGE);
    // Each page's checkpoint replaced the one held before it; the empty read at the end wrote the last.
    expect(r.checkpoints).toEqual([DOCS]);
  });

  it("with maxCheckpointDelay 0 writes each page's checkpoint at once", async () => {
    const r = await drain(0, true);
    expect(r.handled).toBe(DOCS);
    expect(r.pages).toBe(DOCS / PAGE);
    // A page is handled only once the previous checkpoint was written: none is held, none merged into another.
    expect(r.checkpoints).toEqual(Array.from({ length: DOCS / PAGE }, () => PAGE));
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
