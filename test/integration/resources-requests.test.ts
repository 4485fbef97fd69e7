import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createCosmosClient } from "../../packages/core/src/cosmos/client.js";
import { ensureContainers } from "../../src/shared/containers.js";
import {
  type AppContext,
  appContext,
  createAppContext,
  deprovisionStep,
  finalizeStep,
  type OperationDocument,
  provisioningRequestFor,
  provisionStep,
  type ResourceDocument,
  type SummaryDocument,
  startOrchestrations,
  updateSummaries,
  validateStep,
} from "../../src/shared/resources/index.js";
import { loadSettings } from "../../src/shared/settings.js";
import { putThroughFunction } from "../support/app-put.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import { faultPlugins } from "../support/faults.js";

// The exact Cosmos DB requests each step of a provisioning flow makes, counted in the SDK's own pipeline (the
// emulator and the socket real): the request count per flow is what bench:app's end-to-end rate rests on, so a
// step that starts reading or writing once more fails here, not only as a slower bench.

let t: TestEmulator;
/** "METHOD operationType" of every document request the counting context made, in order. */
const seen: string[] = [];
/** Runs once before the next document request of the counting context is sent (a competing write). */
let beforeNext: (() => Promise<void>) | undefined;
let ctx: AppContext;

beforeAll(async () => {
  t = await startTestEmulator();
  process.env.COSMOS_CONNECTION = t.emulator.connectionString;
  await ensureContainers(t.client);
  const counting = createCosmosClient("COSMOS_CONNECTION", {
    clientOptions: faultPlugins({
      match: (c) => c.resourceType === "docs",
      run: async (c, next) => {
        seen.push(`${c.method} ${c.operationType}`);
        const competing = beforeNext;
        beforeNext = undefined;
        await competing?.();
        return next();
      },
    }),
  });
  ctx = createAppContext(counting, loadSettings());
});
afterAll(async () => {
  ctx?.client.dispose();
  delete process.env.COSMOS_CONNECTION;
  await t?.close();
});
beforeEach(() => {
  seen.length = 0;
  beforeNext = undefined;
});

/** A resource PUT through the app's own function: the resource and its Accepted operation, as the feed shows it. */
async function accepted(sub: string, name: string): Promise<ResourceDocument & { _etag: string }> {
  expect((await putThroughFunction(sub, name)).status).toBe(201);
  const { resource } = await appContext()
    .containers.resources.item(name, sub)
    .read<ResourceDocument & { _etag: string }>();
  if (!resource) throw new Error("the PUT stored no resource");
  seen.length = 0;
  return resource;
}

const readOp = async (sub: string, operationId: string) =>
  (await appContext().containers.resources.item(`op:${operationId}`, sub).read<OperationDocument>()).resource;
const readResource = async (sub: string, id: string) =>
  (await appContext().containers.resources.item(id, sub).read<ResourceDocument>()).resource;
const orchestration = { name: "provisioning", instanceId: "provisioning-x" };
/** The summary's recount as the pipeline sees it: the query plan (operation type read), then the query. */
const RECOUNT = ["POST read", "POST query"];

describe("requests per provisioning step", () => {
  it("the reactions trigger makes no request; validate records its sighting in the batch that marks the operation Running", async () => {
    const doc = await accepted("req-1", "a");
    // The trigger only talks to the durable client (here a stand-in that has no instance and records the starts:
    // the real one is in resources-triggers.test.ts); the sighting is the orchestration's input.
    const starts: { instanceId: string; input: unknown }[] = [];
    const starter = {
      getStatus: async () => Promise.reject(new Error("replied with HTTP 404")),
      startNew: async (_name: string, o: { instanceId: string; input: unknown }) => {
        starts.push(o);
        return o.instanceId;
      },
    };
    const seenAt = "2026-12-03T10:00:00.000Z";
    expect(await startOrchestrations(starter, [doc], { seenAt })).toMatchObject({
      started: [`provisioning-${doc.operationId}`],
    });
    expect(seen).toEqual([]);
    const { input } = provisioningRequestFor(doc, { at: seenAt });
    expect(starts).toEqual([{ instanceId: `provisioning-${doc.operationId}`, input }]);
    expect(input.observed).toEqual({ at: seenAt, provisioningState: "Accepted", resourceEtag: doc._etag });

    // Validate: its two reads and one batch, as without a sighting; the operation records it.
    expect(await validateStep(ctx, input, orchestration)).toEqual({ proceed: true });
    expect(seen.sort()).toEqual(["GET read", "GET read", "POST batch"]);
    const first = await readOp("req-1", doc.operationId);
    expect(first).toMatchObject({ status: "Running", observed: input.observed });

    // Validate again (a retried activity, or a second sighting's input): the first record stays, nothing written.
    seen.length = 0;
    const later = provisioningRequestFor(doc, { at: "2026-12-03T11:00:00.000Z" }).input;
    expect(await validateStep(ctx, later, orchestration)).toEqual({ proceed: true });
    expect(seen.sort()).toEqual(["GET read", "GET read"]);
    expect((await readOp("req-1", doc.operationId))?.observed).toEqual(input.observed);
  });

  it("validate → provision → finalize: 3 + 0 + 3 requests, the steps recorded and both documents Succeeded", async () => {
    const doc = await accepted("req-2", "a");
    const input = { subscriptionId: "req-2", resourceId: "a", operationId: doc.operationId };

    expect(await validateStep(ctx, input, orchestration)).toEqual({ proceed: true });
    expect(seen.sort()).toEqual(["GET read", "GET read", "POST batch"]);
    expect(await readOp("req-2", doc.operationId)).toMatchObject({
      status: "Running",
      orchestration: { ...orchestration, step: "validate" },
    });
    expect((await readResource("req-2", "a"))?.provisioningState).toBe("Provisioning");

    // Provision makes no request: the orchestration counts its attempts and validate read the simulate tag.
    seen.length = 0;
    expect(provisionStep(input, { attempt: 1 })).toEqual({ attempt: 1 });
    expect(() => provisionStep(input, { attempt: 1, simulate: "flaky" })).toThrow(/first attempt/);
    expect(provisionStep(input, { attempt: 2, simulate: "flaky" })).toEqual({ attempt: 2 });
    expect(() => provisionStep(input, { attempt: 3, simulate: "fail" })).toThrow(/attempt 3/);
    expect(seen).toEqual([]);

    // Finalize records the orchestration's count of provision attempts in the batch that ends the operation.
    seen.length = 0;
    await finalizeStep(ctx, input, orchestration, 1);
    expect(seen.sort()).toEqual(["GET read", "GET read", "POST batch"]);
    expect(await readOp("req-2", doc.operationId)).toMatchObject({
      status: "Succeeded",
      orchestration: { ...orchestration, step: "done" },
      attempts: { provision: 1 },
    });
    expect((await readResource("req-2", "a"))?.provisioningState).toBe("Succeeded");

    // Run again (an activity retried after its result was lost): nothing more is written.
    seen.length = 0;
    await finalizeStep(ctx, input, orchestration);
    expect(seen.sort()).toEqual(["GET read", "GET read"]);
  });

  it("validate that loses its race (the operation written between its reads and its batch) writes each from a fresh read", async () => {
    const doc = await accepted("req-3", "a");
    const input = { subscriptionId: "req-3", resourceId: "a", operationId: doc.operationId };
    let reads = 0;
    // Before validate's batch (its third request) another writer touches the operation: the batch is refused.
    beforeNext = undefined;
    const arm = () => {
      beforeNext = async () => {
        reads++;
        if (reads < 3) return arm();
        const op = await readOp("req-3", doc.operationId);
        await appContext()
          .containers.resources.item(`op:${doc.operationId}`, "req-3")
          .replace({ ...op, note: "touched" });
      };
    };
    arm();
    expect(await validateStep(ctx, input, orchestration)).toEqual({ proceed: true });
    expect(seen.slice(0, 3).sort()).toEqual(["GET read", "GET read", "POST batch"]);
    expect(seen.slice(3)).toEqual(["GET read", "PUT replace", "GET read", "PUT replace"]);
    expect(await readOp("req-3", doc.operationId)).toMatchObject({
      status: "Running",
      note: "touched",
      orchestration: { ...orchestration, step: "validate" },
    });
    expect((await readResource("req-3", "a"))?.provisioningState).toBe("Provisioning");
  });

  it("deprovision records its step in the batch that removes the resource", async () => {
    const doc = await accepted("req-4", "a");
    const input = { subscriptionId: "req-4", resourceId: "a", operationId: doc.operationId };
    expect(await deprovisionStep(ctx, input, orchestration)).toEqual({
      deleted: true,
      operation: { status: "Succeeded" },
    });
    // The two reads, the batch, then the summary's recount (the feed shows no delete).
    expect(seen.slice(0, 3).sort()).toEqual(["GET read", "GET read", "POST batch"]);
    expect(await readResource("req-4", "a")).toBeUndefined();
    expect(await readOp("req-4", doc.operationId)).toMatchObject({
      status: "Succeeded",
      orchestration: { ...orchestration, step: "done" },
    });
  });
});

describe("requests per summary", () => {
  const summary = async (sub: string) =>
    (await appContext().containers.summaries.item(sub, sub).read<SummaryDocument>()).resource;
  const setState = async (sub: string, id: string, provisioningState: string) => {
    const r = await readResource(sub, id);
    await appContext()
      .containers.resources.item(id, sub)
      .replace({ ...r, provisioningState });
  };

  it("the first recount reads (404) and creates; later ones replace If-Match the ETag this process wrote, without a read", async () => {
    const sub = "req-sum-1";
    const doc = await accepted(sub, "a");
    expect(await updateSummaries(ctx, [doc])).toEqual([sub]);
    expect(seen).toEqual(["GET read", ...RECOUNT, "POST create"]);
    expect((await summary(sub))?.counts).toEqual({ Accepted: 1 });

    // The next change: the recount, then the replace conditioned on the remembered ETag — no read first.
    seen.length = 0;
    await setState(sub, "a", "Succeeded");
    expect(await updateSummaries(ctx, [doc])).toEqual([sub]);
    expect(seen).toEqual([...RECOUNT, "PUT replace"]);
    expect((await summary(sub))?.counts).toEqual({ Succeeded: 1 });

    // Counts equal to the remembered ones are checked against a fresh read (another writer may have stored
    // others since): the same batch again recounts, reads and writes nothing.
    seen.length = 0;
    expect(await updateSummaries(ctx, [doc])).toEqual([]);
    expect(seen).toEqual([...RECOUNT, "GET read"]);
  });

  it("another writer since (412 on the remembered ETag): read, recount, replace — its counts never overwritten by an older count", async () => {
    const sub = "req-sum-2";
    const doc = await accepted(sub, "a");
    expect(await updateSummaries(ctx, [doc])).toEqual([sub]);
    // Another writer (a deprovision step, another host in a lease hand-off) stores its own version.
    const stored = await summary(sub);
    await appContext()
      .containers.summaries.item(sub, sub)
      .replace({ ...stored, counts: { Failed: 7 }, total: 7 });
    await setState(sub, "a", "Succeeded");
    seen.length = 0;
    expect(await updateSummaries(ctx, [doc])).toEqual([sub]);
    expect(seen).toEqual([...RECOUNT, "PUT replace", "GET read", ...RECOUNT, "PUT replace"]);
    expect(await summary(sub)).toMatchObject({ counts: { Succeeded: 1 }, total: 1 });
    // And it remembers the version it wrote: the next recount replaces without a read again.
    seen.length = 0;
    await setState(sub, "a", "Failed");
    expect(await updateSummaries(ctx, [doc])).toEqual([sub]);
    expect(seen).toEqual([...RECOUNT, "PUT replace"]);
  });
});
