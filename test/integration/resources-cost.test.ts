import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureContainers } from "../../src/shared/containers.js";
import {
  appContext,
  finalizeStep,
  provisioningRequestFor,
  provisionStep,
  type ResourceDocument,
  startOrchestrations,
  updateSummaries,
  validateStep,
} from "../../src/shared/resources/index.js";
import { putThroughFunction } from "../support/app-put.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import { addTally, type Tally, tallied } from "../support/meter-tally.js";

// What one flow (PUT → Accepted → Provisioning → Succeeded, its reactions and its summary) costs the app's own
// containers, tallied by the emulator's RU meter around each step the hosts would run (the test's own reads between
// steps are outside the tallies): exact request counts and RU per container, so a cut that is undone — a read
// after a write, a reaction to the orchestration's own change, an index on a path nothing queries — fails here.
// The durable task hub is not counted: in Azure, Durable Functions keeps its state in its own storage provider.

let t: TestEmulator;

beforeAll(async () => {
  t = await startTestEmulator();
  process.env.COSMOS_CONNECTION = t.emulator.connectionString;
  await ensureContainers(t.client);
  // The app's context opens once (container metadata reads): not a flow's cost.
  expect((await putThroughFunction("cost-warmup", "w")).status).toBe(201);
});
afterAll(async () => {
  delete process.env.COSMOS_CONNECTION;
  await t?.close();
});

/**
 * The reactions trigger's durable client, as far as it matters here: no instance exists yet, and a start is taken
 * (the task hub is not counted: see above).
 */
const starter = {
  getStatus: async () => Promise.reject(new Error("replied with HTTP 404")),
  startNew: async (_name: string, o: { instanceId: string }) => o.instanceId,
};

const readResource = async (sub: string, id: string) => {
  const { resource } = await appContext()
    .containers.resources.item(id, sub)
    .read<ResourceDocument & { _etag: string }>();
  if (!resource) throw new Error(`no resource ${sub}/${id}`);
  return resource;
};

describe("one flow's Cosmos DB requests and RU, by container", () => {
  it("PUT → Succeeded with its reactions and summary: exact tallies", async () => {
    const sub = "cost-1";
    const tally: Tally = {};
    const steps: Record<string, Tally> = {};
    const step = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
      const own: Tally = {};
      const out = await tallied(t.emulator, own, run);
      steps[name] = own;
      addTally(tally, own);
      return out;
    };

    // The API: the subscription lock, the read, one batch (operation + resource), the lock's release.
    const put = await step("put", () => putThroughFunction(sub, "a"));
    expect(put.status).toBe(201);
    const accepted = await readResource(sub, "a");
    const ctx = appContext();
    const seenAt = new Date().toISOString();
    const { input } = provisioningRequestFor(accepted, { at: seenAt });
    const orchestration = { name: "provisioning", instanceId: `provisioning-${accepted.operationId}` };

    // The reactions trigger on the Accepted change: it starts the orchestration with the sighting in its input (no
    // Cosmos DB request: validate records it).
    expect(await step("react", () => startOrchestrations(starter, [accepted], { seenAt }))).toMatchObject({
      started: [orchestration.instanceId],
    });
    // The orchestration: validate (two reads, one batch, which records the sighting), provision (nothing),
    // finalize (two reads, one batch).
    expect(await step("validate", () => validateStep(ctx, input, orchestration))).toEqual({ proceed: true });
    const provisioning = await readResource(sub, "a");
    expect(provisioning.provisioningState).toBe("Provisioning");
    expect(provisionStep(input, { attempt: 1 })).toEqual({ attempt: 1 });
    // The reactions trigger ignores the orchestration's own Provisioning change: no request at all.
    expect(
      await step("react-provisioning", () => startOrchestrations(starter, [provisioning])),
    ).toMatchObject({
      started: [],
      skipped: 1,
    });
    await step("finalize", () => finalizeStep(ctx, input, orchestration, 1));
    const succeeded = await readResource(sub, "a");
    expect(succeeded.provisioningState).toBe("Succeeded");
    // The reactions trigger skips the terminal change; the summaries trigger, polling every SUMMARY_POLL_DELAY_MS,
    // recounts the subscription once for the three changes (a query) and creates its summary (a read, a create).
    expect(await step("react-succeeded", () => startOrchestrations(starter, [succeeded]))).toMatchObject({
      skipped: 1,
    });
    expect(await step("summary", () => updateSummaries(ctx, [accepted, provisioning, succeeded]))).toEqual([
      sub,
    ]);

    expect(steps).toEqual({
      // The lock's create and delete (5.2 each); the resource's read (404: 1) and the batch of two writes (11).
      put: { locks: { requests: 2, ru: 10.4 }, resources: { requests: 2, ru: 12 } },
      // The trigger's patch of the sighting (6.5) is gone: validate's batch records it.
      react: {},
      validate: { resources: { requests: 3, ru: 13 } },
      "react-provisioning": {},
      finalize: { resources: { requests: 3, ru: 13 } },
      "react-succeeded": {},
      // The recount (query plan and query) and the summary's read (404) and create.
      summary: { resources: { requests: 2, ru: 3.4 }, summaries: { requests: 2, ru: 6.2 } },
    });
    expect(tally).toEqual({
      resources: { requests: 10, ru: 41.4 },
      locks: { requests: 2, ru: 10.4 },
      summaries: { requests: 2, ru: 6.2 },
    });
  });

  it("a storm's later page with the same subscription: its recount replaces the summary without reading it", async () => {
    // In a storm the summaries trigger's feed is never empty, so a flow's changes can fall in two or three pages, each
    // a recount of the subscription (docs/bench-app.md, cost per flow). The first one is the tally above.
    const sub = "cost-2";
    expect((await putThroughFunction(sub, "a")).status).toBe(201);
    const ctx = appContext();
    const accepted = await readResource(sub, "a");
    expect(await updateSummaries(ctx, [accepted])).toEqual([sub]);
    await ctx.containers.resources.item("a", sub).replace({ ...accepted, provisioningState: "Succeeded" });
    const succeeded = await readResource(sub, "a");

    const later: Tally = {};
    expect(await tallied(t.emulator, later, () => updateSummaries(ctx, [succeeded]))).toEqual([sub]);
    // The recount (query plan and query: 3.4) and the replace If-Match the ETag the first recount wrote (5.2), where
    // a read (1) came first before.
    expect(later).toEqual({ resources: { requests: 2, ru: 3.4 }, summaries: { requests: 1, ru: 5.2 } });
  });
});
