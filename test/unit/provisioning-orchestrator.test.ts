/**
 * The app's orchestrators (functions/provisioning.ts) unit-tested without a host or a database, with the project's
 * orchestrator test helper (packages/devhost/src/durable/testing.ts): scripted activities, durable timers on virtual time.
 */
import { describe, expect, it } from "vitest";
import { deprovisioningOrchestrator, provisioningOrchestrator } from "../../functions/provisioning.js";
import { replayOrchestration, runOrchestration } from "../../packages/devhost/src/durable/testing.js";
import { HistoryEventType, type HistoryEventTypeNumber } from "../../packages/devhost/src/durable/types.js";

const input = {
  subscriptionId: "sub-1",
  resourceId: "web1",
  operationId: "0f8fad5b-d9cb-469f-a165-70867728950e",
};

describe("provisioning orchestrator", () => {
  it("runs validate → provision → finalize and succeeds", async () => {
    const run = await runOrchestration(provisioningOrchestrator, {
      name: "provisioning",
      input,
      activities: {
        validateResource: () => ({ proceed: true }),
        provisionResource: () => ({ attempt: 1 }),
        finalizeResource: () => ({ finalized: true }),
      },
    });
    expect(run.status).toBe("Completed");
    expect(run.output).toEqual({ outcome: "Succeeded" });
    expect(run.customStatus).toEqual({ step: "done" });
    expect(run.activityCalls.map((c) => c.name)).toEqual([
      "validateResource",
      "provisionResource",
      "finalizeResource",
    ]);
    // Activities get the orchestration's name and instance id with their input.
    expect(run.activityCalls[0].input).toMatchObject({ ...input, orchestration: { name: "provisioning" } });
  });

  it("gives the starter's sighting to validate only (it records it); the later steps' inputs are without it", async () => {
    const observed = { at: "2026-01-01T00:00:00.000Z", provisioningState: "Accepted", resourceEtag: '"e1"' };
    const run = await runOrchestration(provisioningOrchestrator, {
      name: "provisioning",
      input: { ...input, observed },
      activities: {
        validateResource: () => ({ proceed: true }),
        provisionResource: () => ({ attempt: 1 }),
        finalizeResource: () => ({ finalized: true }),
      },
    });
    expect(run.status).toBe("Completed");
    const [validate, ...later] = run.activityCalls;
    expect(validate.input).toMatchObject({ ...input, observed });
    expect(later.map((c) => c.name)).toEqual(["provisionResource", "finalizeResource"]);
    for (const c of later) expect(c.input).not.toHaveProperty("observed");
  });

  it("a malformed sighting in the input fails the instance at once, naming the field", async () => {
    for (const observed of [
      "yesterday",
      { at: "not a time", provisioningState: "Accepted", resourceEtag: "e" },
      { at: "2026-01-01T00:00:00.000Z", provisioningState: "Succeeded", resourceEtag: "e" },
      { at: "2026-01-01T00:00:00.000Z", provisioningState: "Accepted" },
      { at: "2026-01-01T00:00:00.000Z", provisioningState: "Accepted", resourceEtag: "e", by: "someone" },
    ]) {
      const run = await runOrchestration(provisioningOrchestrator, {
        name: "provisioning",
        input: { ...input, observed },
      });
      expect(run.status, JSON.stringify(observed)).toBe("Failed");
      expect(String(run.output)).toContain("observed must be");
      expect(run.activityCalls).toEqual([]);
    }
  });

  it("retries a failing step on durable timers (1 s, then 2 s) and succeeds", async () => {
    const run = await runOrchestration(provisioningOrchestrator, {
      name: "provisioning",
      input,
      activities: {
        validateResource: () => ({ proceed: true }),
        provisionResource: (_i, { attempt }) => {
          if (attempt < 3) throw new Error("capacity");
          return { attempt };
        },
        finalizeResource: () => ({}),
      },
    });
    expect(run.status).toBe("Completed");
    expect(run.elapsedMs).toBe(1_000 + 2_000);
  });

  it("a step that keeps failing marks the resource Failed (fail activity) and fails the instance", async () => {
    const run = await runOrchestration(provisioningOrchestrator, {
      name: "provisioning",
      input,
      activities: {
        validateResource: () => ({ proceed: true }),
        provisionResource: () => {
          throw new Error("quota exceeded");
        },
        failResource: (i) => ({ failed: true, i }),
      },
    });
    expect(run.status).toBe("Failed");
    expect(String(run.output)).toContain("quota exceeded");
    const fail = run.activityCalls.find((c) => c.name === "failResource");
    expect(fail?.input).toMatchObject({ error: { code: "ProvisioningFailed" } });
    expect(run.activityCalls.filter((c) => c.name === "provisionResource")).toHaveLength(3);
  });

  it("a superseded operation ends without provisioning", async () => {
    const run = await runOrchestration(provisioningOrchestrator, {
      name: "provisioning",
      input,
      activities: { validateResource: () => ({ proceed: false, reason: "operation x replaced this one" }) },
    });
    expect(run.output).toEqual({ outcome: "Skipped", reason: "operation x replaced this one" });
    expect(run.activityCalls).toHaveLength(1);
  });

  it("bad input fails the instance at once with the reason (never a stuck instance)", async () => {
    const run = await runOrchestration(provisioningOrchestrator, {
      name: "provisioning",
      input: { nope: 1 },
    });
    expect(run.status).toBe("Failed");
    expect(String(run.output)).toContain("subscription id");
    expect(run.activityCalls).toEqual([]);
  });

  it("replayed on a hand-written history, it schedules the provision step next", async () => {
    const at = "2026-01-01T00:00:00.000Z";
    const ev = (EventType: HistoryEventTypeNumber, fields: Record<string, unknown> = {}, EventId = -1) => ({
      EventType,
      EventId,
      IsPlayed: false,
      Timestamp: at,
      ...fields,
    });
    const { reply } = await replayOrchestration(
      provisioningOrchestrator,
      [
        ev(HistoryEventType.OrchestratorStarted),
        ev(HistoryEventType.ExecutionStarted, { Name: "provisioning", Input: JSON.stringify(input) }),
        ev(HistoryEventType.TaskScheduled, { Name: "validateResource" }, 0),
        ev(HistoryEventType.OrchestratorCompleted),
        ev(HistoryEventType.OrchestratorStarted),
        ev(HistoryEventType.TaskCompleted, { TaskScheduledId: 0, Result: JSON.stringify({ proceed: true }) }),
      ],
      { input, name: "provisioning" },
    );
    const actions = (reply?.actions as unknown as { functionName?: string }[][]).flat();
    expect(actions.map((a) => a.functionName)).toEqual(["validateResource", "provisionResource"]);
    expect(reply?.isDone).toBe(false);
  });
});

describe("deprovisioning orchestrator", () => {
  it("validates, then deprovisions", async () => {
    const run = await runOrchestration(deprovisioningOrchestrator, {
      name: "deprovisioning",
      input,
      activities: {
        validateResource: () => ({ proceed: true }),
        deprovisionResource: () => ({ deleted: true }),
      },
    });
    expect(run.output).toEqual({ outcome: "Succeeded", deleted: true });
  });
});
