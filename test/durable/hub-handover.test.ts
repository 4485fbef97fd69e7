/**
 * Handing results over (ownership.ts, the Cosmos DB backend's abandonOrchestrationWorkItem): results a host holds but must not apply become messages, each with the
 * deletion of its activity or timer document. They go 50 to a transactional batch; a batch refused as a whole (a
 * message there already, a source gone) is redone one result at a time. Counted on the emulator: batches sent,
 * messages and sources left.
 */
import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CosmosBackend,
  HAND_OVER_PER_BATCH,
} from "../../packages/devhost/src/durable/cosmos-backend/backend.js";
import { messageId } from "../../packages/devhost/src/durable/documents.js";
import { handOver, type LocalEvent } from "../../packages/devhost/src/durable/ownership.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { faultPlugins } from "../support/faults.js";
import { messageDoc } from "./hub-docs.js";
import { unthrottledHubContainers } from "./hub-harness.js";
import { eventMessage } from "./work-item-driver.js";

const HUB = "HandOverHub";
const INSTANCE = "held";

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-handover") })).database;
});
afterAll(() => t?.close());

/** The hub container through a client that counts the transactional batches it sends. */
function counting(container: Container) {
  const sent = { batches: 0 };
  const client = t.newClient(
    faultPlugins({
      match: (ctx) => {
        if (ctx.operationType === "batch") sent.batches++;
        return false;
      },
      run: (_ctx, next) => next(),
    }),
  );
  const counted = client.database(db.id).container(container.id);
  return { sent, backend: new CosmosBackend({ container: counted, leaseContainer: counted, hubName: HUB }) };
}

async function idsOf(container: Container, kind: string): Promise<string[]> {
  const { resources } = await container.items
    .query<{ id: string }>({
      query: "SELECT c.id FROM c WHERE c.pk = @pk AND c.kind = @kind",
      parameters: [
        { name: "@pk", value: `${HUB}|${INSTANCE}` },
        { name: "@kind", value: kind },
      ],
    })
    .fetchAll();
  return resources.map((r) => r.id).sort();
}

/** `n` results of activities whose documents are stored (the sources the hand-over deletes). */
async function heldResults(container: Container, n: number): Promise<LocalEvent[]> {
  const out: LocalEvent[] = [];
  for (let i = 0; i < n; i++) {
    const sourceId = `activity-e-${String(i).padStart(3, "0")}`;
    await container.items.create({ id: sourceId, pk: `${HUB}|${INSTANCE}`, kind: "activity" });
    out.push({
      message: eventMessage(INSTANCE, `result-${i}`, "done", i),
      sourceId,
      sourceKind: "activity",
      stored: true,
    });
  }
  return out;
}

const options = (backend: CosmosBackend) => ({
  backend,
  newMessageDoc: (m: LocalEvent["message"]) => ({ ...messageDoc(HUB, INSTANCE, m.key, 0), message: m }),
  log: () => undefined,
});

describe("task hub: handing results over", () => {
  it(`writes ${HAND_OVER_PER_BATCH} results to a batch: 120 results in 3 batches, every source deleted`, async () => {
    const { container } = await unthrottledHubContainers(db);
    const local = await heldResults(container, 120);
    const { sent, backend } = counting(container);
    await handOver(options(backend), INSTANCE, local, "lease");
    expect(sent.batches).toBe(3);
    expect(await idsOf(container, "message")).toEqual(local.map((l) => messageId(l.message.key)).sort());
    expect(await idsOf(container, "activity")).toEqual([]);
  });

  it("redoes a refused batch one result at a time: a message already there, a source already gone", async () => {
    const { container } = await unthrottledHubContainers(db);
    const local = await heldResults(container, 10);
    // Result 3 was handed over before (its message exists, its source is still there); result 7 was recorded
    // (its source is gone).
    await container.items.create({
      ...messageDoc(HUB, INSTANCE, local[3].message.key, 0),
      message: local[3].message,
    });
    await container.item(local[7].sourceId, `${HUB}|${INSTANCE}`).delete();
    const { sent, backend } = counting(container);
    await handOver(options(backend), INSTANCE, local, "lease");
    // The whole batch (refused), then one per result, and the deletion of result 3's source alone (its message
    // was there: a bulk request, which the SDK sends as a batch too).
    expect(sent.batches).toBe(1 + 10 + 1);
    const expected = local.filter((_l, i) => i !== 7).map((l) => messageId(l.message.key));
    expect(await idsOf(container, "message")).toEqual(expected.sort());
    expect(await idsOf(container, "activity")).toEqual([]);
  });
});
