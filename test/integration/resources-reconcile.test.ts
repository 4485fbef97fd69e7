import * as df from "durable-functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import {
  appContext,
  type OperationDocument,
  type ResourceDocument,
  reconcileOperations,
  startOrchestrations,
} from "../../src/shared/resources/index.js";
import { newOperation } from "../../src/shared/resources/operations.js";
import { putThroughFunction } from "../support/app-put.js";
import { type AppOnEmulator, startAppOnEmulator } from "../support/app-task-hub.js";
import type { InProcessTaskHub } from "../support/durable-host.js";

// The reconcileOperations timer's work (src/shared/resources/reconcile.ts) against the emulator and a real durable
// client (an in-process task hub running the app's orchestrations): what the trigger or an orchestration missed is
// done. Every case is made by writing (or not running) what a lost trigger batch or a dead orchestration leaves;
// `now` is passed in, so "stalled" is decided by the operation's own timestamps, not by waiting.

let app: AppOnEmulator;
let durable: InProcessTaskHub;
const STALL_MS = 300_000;

beforeAll(async () => {
  app = await startAppOnEmulator();
  ({ durable } = app);
});
afterAll(() => app?.close());

const client = () => df.getClient(durable.context());
const resources = () => appContext().containers.resources;

async function put(sub: string, name: string): Promise<string> {
  const res = await putThroughFunction(sub, name);
  expect(res.status).toBe(201);
  return ((res.headers as Record<string, string>)["Azure-AsyncOperation"] as string)
    .split("/")
    .pop() as string;
}

const readOp = async (sub: string, id: string) =>
  (await resources().item(`op:${id}`, sub).read<OperationDocument>()).resource as OperationDocument;

describe("reconcileOperations", () => {
  it("an accepted operation whose orchestration never started (the trigger gave up): started once it stalls, then it ends", async () => {
    const sub = "rec-start";
    const opId = await put(sub, "a"); // no trigger runs in this test: nothing starts its orchestration
    const acceptedAt = Date.parse((await readOp(sub, opId)).lastUpdatedTime);

    const early = await reconcileOperations(appContext(), client(), {
      now: acceptedAt + STALL_MS - 1,
      stallMs: STALL_MS,
    });
    expect(early.stalled).toBe(0);

    const out = await reconcileOperations(appContext(), client(), {
      now: acceptedAt + STALL_MS + 1,
      stallMs: STALL_MS,
    });
    expect(out).toMatchObject({ stalled: 1, started: [opId], failed: [], ended: [] });
    const op = await until("the restarted orchestration to end the operation", async () => {
      const o = await readOp(sub, opId);
      return o.status === "Succeeded" ? o : undefined;
    });
    expect(op.orchestration).toMatchObject({ instanceId: `provisioning-${opId}`, step: "done" });
    // Once started, a second pass finds it running or done — never starts it twice.
    const again = await reconcileOperations(appContext(), client(), {
      now: Date.now() + STALL_MS,
      stallMs: STALL_MS,
    });
    expect(again.started).toEqual([]);
    expect((await durable.hub.list({ instanceIdPrefix: `provisioning-${opId}` })).instances).toHaveLength(1);

    // The reconciler's sighting rode in the orchestration's input and validate recorded it. The trigger's late
    // delivery of the change (a backlog after downtime) asks first, finds the completed instance and leaves it (a
    // start would run it again over its history).
    expect(op.observed).toMatchObject({ by: "reconcile", provisioningState: "Accepted" });
    const completed = await durable.hub.getStatus(`provisioning-${opId}`);
    expect(completed?.runtimeStatus).toBe("Completed");
    const { resource: doc } = await resources().item("a", sub).read<ResourceDocument & { _etag: string }>();
    const late = { ...doc, provisioningState: "Accepted" as const };
    const started = await startOrchestrations(client(), [late]);
    expect(started).toEqual({ started: [], existing: [`provisioning-${opId}`], skipped: 0 });
    expect((await readOp(sub, opId)).observed).toEqual(op.observed);
    expect((await durable.hub.getStatus(`provisioning-${opId}`))?.createdTime).toEqual(
      completed?.createdTime,
    );
  });

  it("an operation whose orchestration ended without ending it: failed, with its resource, naming the orchestration", async () => {
    const sub = "rec-fail";
    const opId = await put(sub, "b");
    // An orchestration instance of this operation that fails at once (bad input), leaving the operation Accepted.
    await client().startNew("provisioning", { instanceId: `provisioning-${opId}`, input: { bad: true } });
    await until("the bad instance to fail", async () =>
      (await durable.hub.getStatus(`provisioning-${opId}`))?.runtimeStatus === "Failed" ? true : undefined,
    );
    expect((await readOp(sub, opId)).status).toBe("Accepted");

    const out = await reconcileOperations(appContext(), client(), {
      now: Date.now() + STALL_MS,
      stallMs: STALL_MS,
    });
    expect(out.failed).toEqual([opId]);
    const op = await readOp(sub, opId);
    expect(op.status).toBe("Failed");
    expect(op.error?.code).toBe("OrchestrationEnded");
    expect(op.error?.message).toContain(`provisioning-${opId}`);
    const { resource } = await resources().item("b", sub).read<ResourceDocument>();
    expect(resource?.provisioningState).toBe("Failed");
  });

  it("an operation its resource no longer names is Canceled; a delete whose resource is gone Succeeds", async () => {
    const sub = "rec-orphan";
    const current = await put(sub, "c");
    const past = new Date(Date.now() - 2 * STALL_MS).toISOString();
    // Written as no API path can write them (the API supersedes and cancels in one batch): the net still ends them.
    const orphan = newOperation("11111111-1111-4111-8111-111111111111", sub, "c", "Update", past, 3600);
    const gone = newOperation("22222222-2222-4222-8222-222222222222", sub, "d", "Delete", past, 3600);
    await resources().items.create(orphan);
    await resources().items.create(gone);

    const out = await reconcileOperations(appContext(), client(), { now: Date.now(), stallMs: STALL_MS });
    expect(out.ended.sort()).toEqual([orphan.operationId, gone.operationId].sort());
    expect(await readOp(sub, orphan.operationId)).toMatchObject({
      status: "Canceled",
      error: { code: "Superseded", message: expect.stringContaining(current) },
    });
    expect((await readOp(sub, gone.operationId)).status).toBe("Succeeded");
  });
});
