/**
 * Issue 20, kill -9: a task hub host in a child process (hub-child.ts) is killed with SIGKILL in the middle of a
 * 1,000-activity fan-out and of a 30-generation continue-as-new chain — with results of both recorded, activities
 * of both running, episodes in flight — and a restarted host completes both with the right outputs: the fan-out's
 * sum with every task completed once in its history, the chain's generation count and sum. The emulator runs in
 * this process; the test reads and starts instances through a hub it never starts (client operations only).
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import type { ChainInput, HubChildConfig } from "./hub-child.js";
import { startChild } from "./hub-children.js";
import {
  countOf,
  createHub,
  duplicateCompletions,
  historyOf,
  isFinished,
  type ShownEvent,
  unthrottledHubContainers,
  waitForStatus,
} from "./hub-harness.js";

const FAN = 1_000;
const GENERATIONS = 30;
/** Where the first host is held (and killed): after this many fan-out activities started, at this generation. */
const HOLD_FAN_AFTER = 400;
const HOLD_CHAIN_AT = 12;
const HUB = "KillHub";

let t: TestEmulator;
let db: Database;
let dir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-kill") })).database;
  dir = mkdtempSync(join(tmpdir(), "hub-kill-"));
});

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * What each test starts from: a fresh task hub (its containers), the activity log its children write, a way to
 * start a child on it (named "first" unless told otherwise), and a client of the hub in this process — a hub that
 * is never started dispatches nothing: client operations only.
 */
async function killTestHub(logName: string) {
  const { container, leaseContainer } = await unthrottledHubContainers(db);
  const logFile = join(dir, logName);
  const base: HubChildConfig = {
    endpoint: t.emulator.endpoint,
    key: t.emulator.key,
    databaseId: db.id,
    containerId: container.id,
    leaseId: leaseContainer.id,
    hubName: HUB,
    instanceName: "first",
    logFile,
  };
  const client = createHub({ container, leaseContainer, hubName: HUB, orchestrators: {}, activities: {} });
  const child = (more: Partial<HubChildConfig> = {}) => startChild({ ...base, ...more }, children);
  return { container, logFile, client, child };
}

/** The activity lines the children wrote so far. */
function activityLog(file: string): { a: string; i?: number; g?: number }[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as { a: string; i?: number; g?: number });
}

describe("task hub: kill -9", () => {
  it("a host killed in the middle of a 1,000-activity fan-out and a continue-as-new chain; a restarted host completes both", async () => {
    const { logFile, client, child } = await killTestHub("activities.jsonl");

    // A slot for every activity: the 600 held fan-out activities must not keep the chain from its next step.
    const first = await child({
      holdFanAfter: HOLD_FAN_AFTER,
      holdChainAt: HOLD_CHAIN_AT,
      maxConcurrentActivities: FAN,
    });
    const chainStart: ChainInput = { generation: 1, last: GENERATIONS, total: 0 };
    await client.startNew("chain", { instanceId: "chain-1", input: JSON.stringify(chainStart) });
    await client.startNew("fanOut", { instanceId: "fan-1", input: String(FAN) });
    // Both run until their hold point: then the host has results of both recorded and activities of both running.
    const progress = () => {
      const lines = activityLog(logFile);
      const steps = lines.flatMap((l) => (l.a === "step" ? [l.g] : []));
      return `chain steps run: ${steps.join(",")}; fan-out activities started: ${lines.filter((l) => l.a === "double").length}; host stderr (tail): ${first.stderr().slice(-1500)}`;
    };
    await until(`the chain to reach generation ${HOLD_CHAIN_AT}`, async () =>
      activityLog(logFile).some((l) => l.a === "step" && l.g === HOLD_CHAIN_AT) ? true : undefined,
    ).catch((e: Error) => {
      throw new Error(`${e.message} (${progress()})`);
    });
    await until(`${HOLD_FAN_AFTER} fan-out activities to start`, async () =>
      activityLog(logFile).filter((l) => l.a === "double").length > HOLD_FAN_AFTER ? true : undefined,
    ).catch((e: Error) => {
      throw new Error(`${e.message} (${progress()})`);
    });
    await first.kill();
    // Both were in the middle: neither finished.
    expect((await client.getStatus("chain-1"))?.runtimeStatus).toBe("Running");
    expect((await client.getStatus("fan-1"))?.runtimeStatus).toBe("Running");

    const second = await child({ instanceName: "second" });
    const fan = await waitForStatus(client, "fan-1", isFinished);
    expect(fan, second.stderr()).toMatchObject({ runtimeStatus: "Completed", output: (FAN - 1) * FAN });
    const chain = await waitForStatus(client, "chain-1", isFinished);
    expect(chain, second.stderr()).toMatchObject({
      runtimeStatus: "Completed",
      output: { generations: GENERATIONS, total: (GENERATIONS * (GENERATIONS + 1)) / 2 },
    });

    // One execution's worth of history each: every fan-out task scheduled and completed once.
    const fanHistory = await historyOf(client, "fan-1");
    expect(countOf(fanHistory, "TaskScheduled")).toBe(FAN);
    expect(countOf(fanHistory, "TaskCompleted")).toBe(FAN);
    expect(duplicateCompletions(fanHistory)).toEqual([]);
    const chainHistory = await historyOf(client, "chain-1");
    expect(countOf(chainHistory, "TaskScheduled")).toBe(1);
    expect(countOf(chainHistory, "TaskCompleted")).toBe(1);
    // Every generation's step ran (at least once: a step in flight at the kill runs again).
    const steps = new Set(activityLog(logFile).flatMap((l) => (l.a === "step" ? [l.g] : [])));
    expect(steps.size).toBe(GENERATIONS);
    await second.stop();
  });

  it("a host killed in the middle of committing a 1,000-activity fan-out leaves nothing undecided visible; a restarted host completes it", async () => {
    const { container, logFile, client, child } = await killTestHub("commit.jsonl");
    const first = await child({ holdBatchesOf: "fan-2" });
    // 2.5 KB per activity input: the episode scheduling 1,000 activities (2.5 MB of history) is too large for one
    // batch, so it is staged; its deciding batch is written, the rest held.
    await client.startNew("fanOut", { instanceId: "fan-2", input: JSON.stringify({ n: FAN, pad: 2_500 }) });
    await until("the host to be held in the middle of the commit", async () =>
      activityLog(logFile).some((l) => l.a === "held-batch") ? true : undefined,
    );
    await first.kill();
    // The commit was staged and decided (the instance names its stage) but not finished when the host died.
    const { resource: marked } = await container.item("instance", `${HUB}|fan-2`).read<{ stage?: unknown }>();
    expect(marked?.stage).toBeDefined();
    // A commit not applied whole is not visible: the instance shows as it was (Pending, nothing scheduled).
    const between = await client.getStatus("fan-2", { showHistory: true });
    expect(between?.runtimeStatus).toBe("Pending");
    expect(countOf((between?.historyEvents ?? []) as ShownEvent[], "TaskScheduled")).toBe(0);

    const second = await child({ instanceName: "second" });
    const fan = await waitForStatus(client, "fan-2", isFinished);
    expect(fan, second.stderr()).toMatchObject({ runtimeStatus: "Completed", output: (FAN - 1) * FAN });
    // Completed is shown once the commit that completed it is whole: its history holds every completion.
    const history = await historyOf(client, "fan-2");
    expect(countOf(history, "TaskScheduled")).toBe(FAN);
    expect(countOf(history, "TaskCompleted")).toBe(FAN);
    expect(duplicateCompletions(history)).toEqual([]);
    // Nothing ran on the killed host (activities start once their commit is whole); the restarted one ran each once.
    const runs = new Map<number, number>();
    for (const l of activityLog(logFile))
      if (l.a === "double") runs.set(l.i ?? -1, (runs.get(l.i ?? -1) ?? 0) + 1);
    expect(runs.size).toBe(FAN);
    expect([...runs].filter(([, n]) => n !== 1)).toEqual([]);
    await second.stop();
  });
});
