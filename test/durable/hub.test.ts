/**
 * The task hub on each backend — Cosmos DB (the emulator over a real socket: episodes committed by transactional
 * batch, dispatch through the change feed processor) and memory — with REAL durable-functions orchestrators (the
 * SDK's own Orchestrator wraps each generator) and activities: durable timers, external events, the client
 * operations. The same tests on both: the engine's behaviour does not depend on where its documents are.
 */
import { createRequire } from "node:module";
import type { Database } from "@azure/cosmos";
import { InvocationContext } from "@azure/functions";
import type { OrchestrationContext } from "durable-functions";
import * as df from "durable-functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskHubBackend } from "../../packages/devhost/src/durable/backend.js";
import { CosmosBackend } from "../../packages/devhost/src/durable/cosmos-backend/backend.js";
import { TaskHub, TaskHubError } from "../../packages/devhost/src/durable/hub.js";
import { MemoryBackend } from "../../packages/devhost/src/durable/memory-backend/index.js";
import type { InstanceStatus } from "../../packages/devhost/src/durable/types.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { FAST_INTERVALS, processorContainers } from "../support/processor-containers.js";
import { isFinished, waitForStatus } from "./hub-harness.js";

type Gen = (ctx: OrchestrationContext) => Generator<unknown, unknown, never>;

const require = createRequire(import.meta.url);
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createOrchestrator: (f: Gen) => (trigger: unknown, ctx: InvocationContext) => Promise<unknown>;
};

const orchestrators: Record<string, Gen> = {
  sequence: function* (ctx) {
    const a = (yield ctx.df.callActivity("double", ctx.df.getInput())) as number;
    const b = (yield ctx.df.callActivity("double", a)) as number;
    return b;
  },
  fanOut: function* (ctx) {
    const n = ctx.df.getInput() as number;
    const results = (yield ctx.df.Task.all(
      Array.from({ length: n }, (_v, i) => ctx.df.callActivity("double", i)),
    )) as number[];
    return results.reduce((x, y) => x + y, 0);
  },
  retrying: function* (ctx) {
    const retry = new df.RetryOptions(50, 3);
    return yield ctx.df.callActivityWithRetry("flaky", retry, ctx.df.instanceId);
  },
  approval: function* (ctx) {
    ctx.df.setCustomStatus("waiting");
    const answer = yield ctx.df.waitForExternalEvent("answer");
    return { answer };
  },
  napping: function* (ctx) {
    yield ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + 300));
    return "rested";
  },
};

const flakyAttempts = new Map<string, number>();
const activities: Record<string, (input: unknown) => unknown> = {
  double: (n) => (n as number) * 2,
  flaky: (id) => {
    const n = (flakyAttempts.get(String(id)) ?? 0) + 1;
    flakyAttempts.set(String(id), n);
    if (n < 3) throw new Error(`attempt ${n} failed`);
    return `ok after ${n}`;
  },
};

/** A backend for the hub and how to close what it needs. */
type OpenBackend = () => Promise<{ backend: TaskHubBackend; close(): Promise<void> }>;

const cosmos: OpenBackend = async () => {
  const t: TestEmulator = await startTestEmulator();
  const db: Database = (await t.client.databases.create({ id: uniqueName("durable") })).database;
  const { container: leases } = await db.containers.create({
    id: "leases",
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  const { monitored } = await processorContainers(db, 1);
  return {
    backend: new CosmosBackend({ container: monitored, leaseContainer: leases, hubName: "TestHub" }),
    close: () => t.close(),
  };
};
const memory: OpenBackend = async () => ({
  backend: new MemoryBackend({ hubName: "TestHub" }),
  close: async () => {},
});

describe.each([
  ["Cosmos DB", cosmos],
  ["memory", memory],
])("task hub on %s", (_label, open) => {
  let hub: TaskHub;
  let closeBackend: (() => Promise<void>) | undefined;
  let invocations = 0;

  beforeAll(async () => {
    flakyAttempts.clear();
    const opened = await open();
    closeBackend = opened.close;
    const handlers = new Map(Object.entries(orchestrators).map(([n, g]) => [n, createOrchestrator(g)]));
    hub = new TaskHub({
      backend: opened.backend,
      hubName: "TestHub",
      feedPollDelayMs: FAST_INTERVALS.feedPollDelay,
      timerScanIntervalMs: 200,
      invokeOrchestrator: async (name, input) => {
        invocations++;
        const h = handlers.get(name);
        if (!h)
          return {
            thrown: new Error(
              `The function '${name}' doesn't exist, is disabled, or is not an orchestrator function.`,
            ),
          };
        const ctx = new InvocationContext({ functionName: name, invocationId: String(invocations) });
        try {
          return { returned: JSON.parse(JSON.stringify(await h(input, ctx))) };
        } catch (e) {
          return { thrown: e };
        }
      },
      invokeActivity: async (item) => {
        const fn = activities[item.name];
        try {
          if (!fn) throw new Error(`no activity ${item.name}`);
          const value = await fn(item.input === null ? undefined : JSON.parse(item.input));
          return { result: JSON.stringify(value ?? null) };
        } catch (e) {
          return { failure: { ErrorType: "Error", ErrorMessage: (e as Error).message } };
        }
      },
    });
    await hub.start();
  });

  afterAll(async () => {
    await hub?.stop();
    await closeBackend?.();
  });

  const until = (id: string, done: (s: InstanceStatus) => boolean) => waitForStatus(hub, id, done);

  it("runs a sequence of activities to Completed", async () => {
    const { instanceId } = await hub.startNew("sequence", { instanceId: "seq-1", input: "3" });
    const s = await until(instanceId, isFinished);
    expect(s).toMatchObject({ runtimeStatus: "Completed", output: 12, input: 3, name: "sequence" });
  });

  it("fans out over 20 activities", async () => {
    const { instanceId } = await hub.startNew("fanOut", { input: "20" });
    const s = await until(instanceId, isFinished);
    expect(s.output).toBe((2 * (19 * 20)) / 2);
  });

  it("retries a failing activity on durable timers", async () => {
    const { instanceId } = await hub.startNew("retrying", { instanceId: "retry-1" });
    const s = await until(instanceId, isFinished);
    expect(s).toMatchObject({ runtimeStatus: "Completed", output: "ok after 3" });
    const withHistory = await hub.getStatus(instanceId, { showHistory: true, showHistoryOutput: true });
    const types = (withHistory?.historyEvents ?? []).map((e) => (e as { EventType: string }).EventType);
    expect(types.filter((x) => x === "TimerCreated")).toHaveLength(2);
    expect(types.filter((x) => x === "TaskFailed")).toHaveLength(2);
  });

  it("fires a durable timer", async () => {
    const { instanceId } = await hub.startNew("napping", {});
    expect((await until(instanceId, isFinished)).output).toBe("rested");
  });

  it("waits for an external event; refuses a second start of a running instance", async () => {
    const { instanceId } = await hub.startNew("approval", { instanceId: "approve-1" });
    await until(instanceId, (s) => s.customStatus === "waiting");
    await expect(hub.startNew("approval", { instanceId })).rejects.toBeInstanceOf(TaskHubError);
    expect(await hub.raiseEvent(instanceId, "answer", JSON.stringify({ ok: true }))).toBe("ok");
    const s = await until(instanceId, isFinished);
    expect(s.output).toEqual({ answer: { ok: true } });
    expect(await hub.raiseEvent(instanceId, "answer", null)).toBe("notRunning");
    expect(await hub.raiseEvent("nobody-here", "answer", null)).toBe("notFound");
  });

  it("suspends, resumes and terminates", async () => {
    const { instanceId } = await hub.startNew("approval", { instanceId: "suspend-1" });
    await until(instanceId, (s) => s.customStatus === "waiting");
    expect(await hub.suspend(instanceId, "hold on")).toBe("ok");
    await until(instanceId, (s) => s.runtimeStatus === "Suspended");
    await hub.raiseEvent(instanceId, "answer", JSON.stringify("while suspended"));
    // The event waits while suspended …
    await new Promise((r) => setTimeout(r, 300));
    expect((await hub.getStatus(instanceId))?.runtimeStatus).toBe("Suspended");
    expect(await hub.resume(instanceId, "go")).toBe("ok");
    // … and applies after the resume.
    expect((await until(instanceId, isFinished)).output).toEqual({ answer: "while suspended" });

    const other = await hub.startNew("approval", { instanceId: "terminate-1" });
    await until(other.instanceId, (s) => s.customStatus === "waiting");
    expect(await hub.terminate(other.instanceId, "no longer needed")).toBe("ok");
    const s = await until(other.instanceId, isFinished);
    expect(s).toMatchObject({ runtimeStatus: "Terminated", output: "no longer needed" });
  });

  it("fails an instance of an unknown orchestrator with the reason; lists and purges", async () => {
    const { instanceId } = await hub.startNew("doesNotExist", { instanceId: "unknown-1" });
    const s = await until(instanceId, isFinished);
    expect(s.runtimeStatus).toBe("Failed");
    expect(String(s.output)).toContain("doesNotExist");
    const failed = await hub.list({ runtimeStatus: ["Failed"] });
    expect(failed.instances.map((i) => i.instanceId)).toContain(instanceId);
    expect(await hub.purge(instanceId)).toBe(1);
    expect(await hub.getStatus(instanceId)).toBeUndefined();
    expect(await hub.purge(instanceId)).toBe(0);
  });

  it("waits leave nothing behind, and a wait given an older lastUpdatedTime returns at once", async () => {
    const { instanceId } = await hub.startNew("approval", { instanceId: "waits-1" });
    const running = await until(instanceId, (s) => s.runtimeStatus === "Running");
    // 200 waits: half ended by their request going away, half by their (short) timeout.
    await Promise.all(
      Array.from({ length: 200 }, (_v, i) => {
        const gone = new AbortController();
        const wait = hub.waitForChange(instanceId, i % 2 ? 5 : 60_000, gone.signal);
        if (i % 2 === 0) gone.abort();
        return wait;
      }),
    );
    expect(hub.waiterCount).toBe(0);
    // A change the caller has not read yet: the wait does not wait for it (else this would take 60 s).
    await hub.raiseEvent(instanceId, "answer", JSON.stringify("yes"));
    const done = await until(instanceId, isFinished);
    await hub.waitForChange(instanceId, 60_000, undefined, running.lastUpdatedTime);
    expect(done.lastUpdatedTime > running.lastUpdatedTime).toBe(true);
    expect(hub.waiterCount).toBe(0);
  });

  it("refuses bad instance ids", async () => {
    await expect(hub.startNew("sequence", { instanceId: "a/b" })).rejects.toMatchObject({ statusCode: 400 });
    await expect(hub.startNew("sequence", { instanceId: "x".repeat(101) })).rejects.toMatchObject({
      statusCode: 400,
    });
  });
});
