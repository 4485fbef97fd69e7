/**
 * The task hub starts the activities of an episode it commits on its own host, without waiting for the change feed,
 * under a claim on the instance: an activity that runs longer than the claim keeps it renewed and is not run again,
 * and an activity started on a host that then dies is run by another host once its claim expires. Against
 * the emulator over a real socket, with a real durable-functions orchestrator; counts, no clocks.
 */
import { createRequire } from "node:module";
import type { Container, Database } from "@azure/cosmos";
import { InvocationContext } from "@azure/functions";
import type { OrchestrationContext } from "durable-functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import {
  CosmosTaskHub,
  type CosmosTaskHubOptions,
} from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import type { ActivityInvoker, InstanceStatus } from "../../packages/devhost/src/durable/types.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import { FAST_INTERVALS, processorContainers } from "../support/processor-containers.js";

type Gen = (ctx: OrchestrationContext) => Generator<unknown, unknown, never>;
const require = createRequire(import.meta.url);
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createOrchestrator: (f: Gen) => (trigger: unknown, ctx: InvocationContext) => Promise<unknown>;
};

/** Three activities one after another, as the provisioning orchestrations do. */
const steps = createOrchestrator(function* (ctx) {
  const a = (yield ctx.df.callActivity("double", ctx.df.getInput())) as number;
  const b = (yield ctx.df.callActivity("double", a)) as number;
  return yield ctx.df.callActivity("double", b);
});

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: "durable-local" })).database;
});

afterAll(async () => {
  await t?.close();
});

function hubOn(
  containers: { monitored: Container; leases: Container },
  instanceName: string,
  invokeActivity: ActivityInvoker,
  log: string[] = [],
  extra: Partial<CosmosTaskHubOptions> = {},
): CosmosTaskHub {
  return new CosmosTaskHub({
    ...extra,
    container: containers.monitored,
    leaseContainer: containers.leases,
    hubName: "LocalHub",
    instanceName,
    feedPollDelayMs: FAST_INTERVALS.feedPollDelay,
    leaseAcquireIntervalMs: FAST_INTERVALS.leaseAcquireInterval,
    leaseRenewIntervalMs: FAST_INTERVALS.leaseRenewInterval,
    leaseExpirationIntervalMs: FAST_INTERVALS.leaseExpirationInterval,
    timerScanIntervalMs: 200,
    // A dead host's claimed activity is run again once its claim expires.
    activityLockMs: 1_500,
    log: (_level, message) => log.push(message),
    invokeOrchestrator: async (name, input) => {
      if (name !== "steps") return { thrown: new Error(`no orchestrator ${name}`) };
      const ctx = new InvocationContext({ functionName: name, invocationId: name });
      try {
        return { returned: JSON.parse(JSON.stringify(await steps(input, ctx))) };
      } catch (e) {
        return { thrown: e };
      }
    },
    invokeActivity,
  });
}

/** An activity's work item, as its document id names it. */
const keyOf = (item: { executionId: string; taskScheduledId: number }) =>
  `activity-${item.executionId}-${item.taskScheduledId}`;

const completed = (hub: CosmosTaskHub, id: string) =>
  until(`instance ${id} completed`, async () => {
    const s = await hub.getStatus(id);
    return s && ["Completed", "Failed", "Terminated"].includes(s.runtimeStatus) ? s : undefined;
  });

describe("activities started by the host that committed the episode", () => {
  it("an activity that runs longer than its claim keeps the claim renewed and is not run again", async () => {
    const containers = await processorContainers(db, 1);
    const runs = new Map<string, number>();
    const log: string[] = [];
    let releaseFirst: (() => void) | undefined;
    const firstHeld = new Promise<void>((r) => {
      releaseFirst = r;
    });
    const hub = hubOn(
      containers,
      "only",
      async (item) => {
        const key = keyOf(item);
        runs.set(key, (runs.get(key) ?? 0) + 1);
        if (runs.size === 1) await firstHeld; // the first activity is held while its claim is renewed
        return { result: JSON.stringify((JSON.parse(item.input ?? "0") as number) * 2) };
      },
      log,
    );
    await hub.start();
    const { instanceId } = await hub.startNew("steps", { instanceId: "local-1", input: "3" });
    // The first episode runs here at once: its commit claims the activity (on the instance), which starts here.
    await until("the first activity to start here", () => (runs.size === 1 ? true : undefined));
    const claimOf = async () =>
      (
        await containers.monitored
          .item("instance", `LocalHub|${instanceId}`)
          .read<{ claim?: { owner: string; until: number } }>()
      ).resource?.claim;
    try {
      const claims = new Set<number>();
      // Three claim times: renewed twice, so the first claim's time has passed while the activity still ran (the
      // feed and the scans saw the instance meanwhile) — and it was not run again.
      await until("the claim to be renewed twice", async () => {
        const c = await claimOf();
        expect(c?.owner).toMatch(/^only-/);
        if (c) claims.add(c.until);
        return claims.size >= 3 ? true : undefined;
      });
      expect([...runs.values()]).toEqual([1]);
      releaseFirst?.();
      const s: InstanceStatus = await completed(hub, instanceId);
      expect(s).toMatchObject({ runtimeStatus: "Completed", output: 24 });
      // Three activities, each run exactly once on this one host; nothing pending, no claim left.
      expect([...runs.values()]).toEqual([1, 1, 1]);
      expect(await claimOf()).toBeUndefined();
    } finally {
      releaseFirst?.();
      await hub.stop();
    }
  });

  it("an activity started on a host that dies before recording it is run by another host once its claim expires", async () => {
    const containers = await processorContainers(db, 1);
    const startedOnFirst: string[] = [];
    const first = hubOn(containers, "first", async (item) => {
      startedOnFirst.push(keyOf(item));
      return new Promise(() => undefined); // never answers: the host dies with it
    });
    const runsOnSecond = new Map<string, number>();
    const second = hubOn(containers, "second", async (item) => {
      const key = keyOf(item);
      runsOnSecond.set(key, (runsOnSecond.get(key) ?? 0) + 1);
      return { result: JSON.stringify((JSON.parse(item.input ?? "0") as number) * 2) };
    });
    await first.start();
    const { instanceId } = await first.startNew("steps", { instanceId: "local-2", input: "5" });
    // The first episode commits here and starts its activity here.
    await until("the first activity to start on the first host", () =>
      startedOnFirst.length === 1 ? true : undefined,
    );
    await first.abandon(); // a crash: nothing handed off, nothing recorded
    await second.start();
    try {
      const s = await completed(second, instanceId);
      expect(s).toMatchObject({ runtimeStatus: "Completed", output: 40 });
      expect(runsOnSecond.get(startedOnFirst[0] as string)).toBe(1);
      expect([...runsOnSecond.values()]).toEqual([1, 1, 1]);
    } finally {
      await second.stop();
    }
  });

  it("a hung activity does not hold the hub's stop (DURABLE_STOP_GRACE_MS)", async () => {
    const containers = await processorContainers(db, 1);
    let started = 0;
    const hub = hubOn(
      containers,
      "hung",
      async () => {
        started++;
        return new Promise(() => undefined); // never answers
      },
      [],
      { stopGraceMs: 200 },
    );
    await hub.start();
    await hub.startNew("steps", { instanceId: "hung-1", input: "1" });
    await until("the activity to start", () => (started === 1 ? true : undefined));
    // Without the grace this would wait for the activity forever (the test would time out).
    await hub.stop();
    expect(started).toBe(1);
  });

  it("an activity's result that comes while its instance is suspended waits as a message and applies after resume", async () => {
    const containers = await processorContainers(db, 1);
    let runs = 0;
    let release: (() => void) | undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const hub = hubOn(containers, "suspend", async (item) => {
      runs++;
      if (runs === 1) await held;
      return { result: JSON.stringify((JSON.parse(item.input ?? "0") as number) * 2) };
    });
    await hub.start();
    try {
      const { instanceId } = await hub.startNew("steps", { instanceId: "suspend-1", input: "1" });
      await until("the first activity to start", () => (runs === 1 ? true : undefined));
      expect(await hub.suspend(instanceId, "hold")).toBe("ok");
      await until("the instance to be suspended", async () =>
        (await hub.getStatus(instanceId))?.runtimeStatus === "Suspended" ? true : undefined,
      );
      release?.();
      // The result cannot apply while suspended: it is stored as a message (held in memory it would be lost).
      await until("the result to wait as a message", async () => {
        const { resources } = await containers.monitored.items
          .query({
            query: "SELECT c.id FROM c WHERE c.kind = 'message' AND c.instanceId = @id",
            parameters: [{ name: "@id", value: instanceId }],
          })
          .fetchAll();
        return resources.length === 1 ? true : undefined;
      });
      expect(await hub.resume(instanceId, "go")).toBe("ok");
      const s = await completed(hub, instanceId);
      expect(s).toMatchObject({ runtimeStatus: "Completed", output: 8 });
      expect(runs).toBe(3);
    } finally {
      release?.();
      await hub.stop();
    }
  });
});
