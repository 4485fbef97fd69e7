/**
 * Durable bench: configuration (every count and timing knob, named once), the emulator child, the CosmosClient
 * with the observer tally, and a task hub per scenario — `CosmosTaskHub` through its public constructor and
 * `start`/`stop` only, with the dev host's settings (readDurableHubSettings, as runtime.ts passes them), so the
 * bench runs unchanged on any hub that keeps that API.
 */

import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Container, CosmosClient, type CosmosClientOptions, type Database } from "@azure/cosmos";
import type * as Functions from "@azure/functions";
import {
  CosmosTaskHub,
  type CosmosTaskHubOptions,
  type DurableHubSettings,
  readDurableHubSettings,
  taskHubContainerRequest,
} from "@cosmos-feed/devhost/durable";
import type { MeterSnapshot } from "@cosmos-feed/emulator";
import { EmulatorProcess } from "../lib/emulator-process.js";
import { envNumber } from "../lib/stats.js";
import type { EmulatorChildStats } from "./emulator.child.js";
import type { ObserverTally } from "./tally.js";
import { activities, type Generator3, orchestrators } from "./workload.js";

export const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(HERE, "..", "..");
export const RESULTS_FILE = join(ROOT, "bench", "results", "durable.json");
export const DB = "bench";

/** `--quick`: small counts for a CI smoke run (the JSON is left alone). */
export const quick = process.argv.includes("--quick");
const n = (name: string, full: number, small: number) => envNumber(name, quick ? small : full);

export const config = {
  quick,
  sequence: {
    /** Orchestrations run (one at a time) and not recorded first: connections, caches, JIT. */
    warmup: n("BENCH_DURABLE_WARMUP", 100, 2),
    runs: n("BENCH_DURABLE_SEQ_RUNS", 100, 20),
  },
  burst: { orchestrations: n("BENCH_DURABLE_BURST", 200, 50) },
  fanOut: { activities: n("BENCH_DURABLE_FANOUT", 1_000, 100) },
  slowNeighbour: {
    activityMs: 5_000,
    /** The fast orchestrations start this long after the slow one. */
    delayMs: 100,
    orchestrations: 10,
    rounds: n("BENCH_DURABLE_SLOW_ROUNDS", 2, 1),
  },
  memory: {
    /** RSS is read after this many orchestrations, then after `total`. */
    first: n("BENCH_DURABLE_MEMORY_FIRST", 1_000, 100),
    total: n("BENCH_DURABLE_MEMORY_TOTAL", 10_000, 500),
    /** Orchestrations started at once, one batch after the other. */
    batch: 100,
    /** The phase stops after this many seconds even short of `total` (the JSON says how far it got). */
    budgetSeconds: n("BENCH_DURABLE_MEMORY_BUDGET_S", 220, 30),
    /** A reading: after `settleMs` of quiet, the median of `samples` samples `sampleGapMs` apart (memory.ts). */
    reading: { settleMs: 500, samples: 3, sampleGapMs: 200 },
  },
  entities: {
    /** Signals the client sends to one entity, then spread over `keys` entities. */
    signals: n("BENCH_DURABLE_ENTITY_SIGNALS", 1_000, 200),
    keys: 100,
    /** Signals in flight from the client at once (each is one create in the entity's partition). */
    sendConcurrency: 16,
    /** Sequential callEntity round trips in one orchestration (the first `warmup` not recorded). */
    calls: n("BENCH_DURABLE_ENTITY_CALLS", 200, 50),
    warmup: 5,
    /** The three measurements are repeated this many times (fresh entities each); the JSON has each and the medians. */
    rounds: n("BENCH_DURABLE_ENTITY_ROUNDS", 3, 1),
    /** How often the entities' states are read to see whether every signal is applied. */
    statePollMs: 100,
  },
  /** Scenario 1's hub is left idle this long after its warm-up, to measure its background requests per second. */
  idleWindowMs: n("BENCH_DURABLE_IDLE_MS", 5_000, 2_000),
  observe: {
    /** One waitForChange call waits at most this long before the status is read again. */
    waitSliceMs: 1_000,
    /** Bursts: how often the instances are listed to see whether all are done (completion times come from each
     *  instance's lastUpdatedTime, so this only decides when the bench stops waiting). */
    listPollMs: 200,
    /** Any one wait (a scenario's orchestrations) gives up after this long: the JSON then says so. */
    timeoutMs: n("BENCH_DURABLE_TIMEOUT_S", 120, 60) * 1_000,
  },
};

export type Emulator = EmulatorProcess<EmulatorChildStats>;

export function startEmulatorChild(): Promise<Emulator> {
  return EmulatorProcess.start<EmulatorChildStats>(join(HERE, "emulator.child.ts"), [], ROOT);
}

/** The bench's client: one for the hubs (as the dev host has one), with the observer tally's plugin. */
export function newClient(emu: Emulator, tally: ObserverTally): CosmosClient {
  // `plugins` is a real client option the SDK's typings leave out (@hidden).
  return new CosmosClient({
    endpoint: emu.endpoint,
    key: emu.key,
    plugins: [tally.plugin()],
  } as CosmosClientOptions);
}

const require = createRequire(import.meta.url);
// @azure/functions is a CommonJS bundle whose named exports ESM cannot see: the instance durable-functions uses.
const { InvocationContext } = require("@azure/functions") as typeof Functions;
type OrchestrationHandler = (trigger: unknown, ctx: Functions.InvocationContext) => Promise<unknown>;
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createOrchestrator: (f: Generator3) => OrchestrationHandler;
};

/** What a hub did, counted in its invokers (the hub's own API does not say how often it replays). */
export interface HubCounters {
  orchestratorInvocations: number;
  activityInvocations: number;
  /** Lines the hub logged at warning or error (the first few kept). */
  problems: number;
  firstProblems: string[];
}

export interface BenchHub {
  hub: CosmosTaskHub;
  /** Meter keys (`db/container`) of the hub's container and its lease container. */
  meterKeys: { hub: string; leases: string };
  counters: HubCounters;
  settings: DurableHubSettings;
}

const PROBLEMS_KEPT = 5;

/**
 * A fresh task hub on fresh containers (created as runtime.ts creates them: the hub's own definition — `/pk`, only
 * the queried paths indexed — and `/id` with TTL for the leases; no throughput), started. Each scenario has its own, so one scenario's leftovers cannot slow the next.
 */
export async function openHub(
  db: Database,
  name: string,
  more: Pick<CosmosTaskHubOptions, "invokeEntity"> = {},
): Promise<BenchHub> {
  const { container } = await db.containers.create(taskHubContainerRequest(name));
  const { container: leases } = await db.containers.create({
    id: `${name}-leases`,
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  const counters: HubCounters = {
    orchestratorInvocations: 0,
    activityInvocations: 0,
    problems: 0,
    firstProblems: [],
  };
  const settings = readDurableHubSettings(process.env);
  const handlers = new Map(Object.entries(orchestrators).map(([k, g]) => [k, createOrchestrator(g)]));
  const options: CosmosTaskHubOptions = {
    container,
    leaseContainer: leases,
    hubName: "BenchHub",
    ...settings,
    invokeOrchestrator: async (fn, input) => {
      counters.orchestratorInvocations++;
      const handler = handlers.get(fn);
      if (!handler) return { thrown: new Error(`no orchestrator '${fn}'`) };
      const ctx = new InvocationContext({
        functionName: fn,
        invocationId: String(counters.orchestratorInvocations),
      });
      try {
        // Through JSON, as the worker's reply travels to the host.
        return { returned: JSON.parse(JSON.stringify(await handler(input, ctx))) };
      } catch (e) {
        return { thrown: e };
      }
    },
    invokeActivity: async (item) => {
      counters.activityInvocations++;
      const fn = activities[item.name];
      try {
        if (!fn) throw new Error(`no activity '${item.name}'`);
        const value = await fn(item.input === null ? undefined : JSON.parse(item.input));
        return { result: JSON.stringify(value ?? null) };
      } catch (e) {
        return { failure: { ErrorType: "Error", ErrorMessage: (e as Error).message } };
      }
    },
    log: (level, message) => {
      if (level !== "warning" && level !== "error") return;
      counters.problems++;
      if (counters.firstProblems.length < PROBLEMS_KEPT) counters.firstProblems.push(`${level}: ${message}`);
    },
    ...more,
  };
  const hub = new CosmosTaskHub(options);
  await hub.start();
  return { hub, meterKeys: { hub: meterKey(container), leases: meterKey(leases) }, counters, settings };
}

const meterKey = (c: Container) => `${c.database.id}/${c.id}`;

/** Requests and RU of one container between two snapshots, by kind, with totals. */
export interface Cost {
  requests: number;
  ru: number;
  byKind: Record<string, { count: number; ru: number }>;
}

/** `after − before` for `container`, optionally minus the observer's share over the same interval. */
export function costOf(
  before: MeterSnapshot<string>,
  after: MeterSnapshot<string>,
  container: string,
  observer?: { before: MeterSnapshot<string>; after: MeterSnapshot<string> },
): Cost {
  const byKind: Record<string, { count: number; ru: number }> = {};
  const add = (snapshot: MeterSnapshot<string>, sign: number) => {
    for (const [kind, e] of Object.entries(snapshot[container] ?? {})) {
      if (!e) continue;
      const row = byKind[kind] ?? { count: 0, ru: 0 };
      byKind[kind] = { count: row.count + sign * e.count, ru: row.ru + sign * e.ru };
    }
  };
  add(after, 1);
  add(before, -1);
  if (observer) {
    add(observer.after, -1);
    add(observer.before, 1);
  }
  for (const [k, e] of Object.entries(byKind)) if (e.count === 0 && Math.abs(e.ru) < 1e-9) delete byKind[k];
  const values = Object.values(byKind);
  return {
    requests: values.reduce((s, e) => s + e.count, 0),
    ru: values.reduce((s, e) => s + e.ru, 0),
    byKind,
  };
}
