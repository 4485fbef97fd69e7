/**
 * What the provisioning orchestration's output says about its operation: the app's own orchestrator and activities
 * (functions/provisioning.ts) run by the orchestrator test helper against the emulator, with PUTs through the app's
 * own function. A PUT superseded while its orchestration runs must not report a successful provisioning.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runOrchestration } from "../../packages/devhost/src/durable/testing.js";
import { ensureContainers } from "../../src/shared/containers.js";
import { appContext, type OperationDocument } from "../../src/shared/resources/index.js";
import { operationDocId } from "../../src/shared/resources/operations.js";
import { putThroughFunction } from "../support/app-put.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

let t: TestEmulator;
let app: typeof import("../../functions/provisioning.js");

beforeAll(async () => {
  t = await startTestEmulator();
  process.env.COSMOS_CONNECTION = t.emulator.connectionString;
  await ensureContainers(t.client);
  // Loaded after the connection is set: the module reads its settings when it loads.
  app = await import("../../functions/provisioning.js");
});
afterAll(async () => {
  delete process.env.COSMOS_CONNECTION;
  await t?.close();
});

/** A PUT through the app's function; its operation's id (from Azure-AsyncOperation). */
async function put(sub: string, name: string, tags: Record<string, string> = {}): Promise<string> {
  const res = await putThroughFunction(sub, name, { properties: { sku: "basic" }, tags });
  expect([200, 201]).toContain(res.status);
  const url = (res.headers as Record<string, string>)["Azure-AsyncOperation"];
  return url.split("/").pop() as string;
}

async function operation(sub: string, operationId: string): Promise<OperationDocument> {
  const { resource } = await appContext()
    .containers.resources.item(operationDocId(operationId), sub)
    .read<OperationDocument>();
  return resource as OperationDocument;
}

/** The app's provisioning orchestration for `operationId`, its activities the app's own; `duringProvision` runs first. */
function provision(sub: string, name: string, operationId: string, duringProvision?: () => Promise<unknown>) {
  return runOrchestration(app.provisioningOrchestrator, {
    name: "provisioning",
    instanceId: `provisioning-${operationId}`,
    input: { subscriptionId: sub, resourceId: name, operationId },
    activities: {
      validateResource: app.validateResource,
      provisionResource: async (input) => {
        await duringProvision?.();
        return app.provisionResource(input);
      },
      finalizeResource: app.finalizeResource,
      failResource: app.failResource,
    },
  });
}

describe("the provisioning orchestration's output is what happened to its operation", () => {
  it("an operation it ends Succeeded: Succeeded", async () => {
    const op = await put("out-1", "web1");
    const run = await provision("out-1", "web1", op);
    expect(run.status).toBe("Completed");
    expect(run.output).toEqual({ outcome: "Succeeded" });
    expect((await operation("out-1", op)).status).toBe("Succeeded");
  });

  it("a PUT superseded while it provisions: Canceled, naming the PUT that replaced it", async () => {
    let second = "";
    const first = await put("out-2", "web1");
    const run = await provision("out-2", "web1", first, async () => {
      second ||= await put("out-2", "web1", { team: "b" });
    });
    expect(run.status).toBe("Completed");
    expect((await operation("out-2", first)).status).toBe("Canceled");
    expect(run.output).toEqual({
      outcome: "Canceled",
      supersededBy: second,
      reason: expect.stringContaining(second),
    });
  });

  it("a PUT superseded before its orchestration starts: Canceled by validate, naming the newer one", async () => {
    const first = await put("out-3", "web1");
    const second = await put("out-3", "web1", { team: "b" });
    const run = await provision("out-3", "web1", first);
    expect(run.output).toEqual({ outcome: "Canceled", supersededBy: second, reason: expect.any(String) });
    expect(run.activityCalls.map((c) => c.name)).toEqual(["validateResource"]);
  });

  it("a failing PUT superseded while it fails: Canceled, not Failed", async () => {
    let second = "";
    const fail = { "cosmos-feed.simulate": "fail" };
    const first = await put("out-4", "web1", fail);
    const run = await provision("out-4", "web1", first, async () => {
      second ||= await put("out-4", "web1", fail);
    });
    expect(run.status).toBe("Completed");
    expect(run.output).toMatchObject({ outcome: "Canceled", supersededBy: second });
    expect((await operation("out-4", first)).status).toBe("Canceled");
  });
});
