/**
 * App bench: configuration (every knob and timing of the bench named here once), the HTTP client, and the
 * processes the scenarios run on: an emulator child (bench/changefeed.child.ts emulator) and a dev host child
 * (`cosmos-feed start` on the compiled app, started as test/e2e/support/app-child.ts starts one).
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { Agent as HttpAgent } from "node:http";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CosmosClient } from "@azure/cosmos";
import { type DatabaseDefinition, ensureContainers } from "../../src/shared/containers.js";
import type { ToParent } from "../changefeed.child.js";
import { type AppChild, startAppChild } from "../lib/app-child.js";
import { EmulatorProcess } from "../lib/emulator-process.js";
import { httpCall } from "../lib/http-call.js";
import { envNumber } from "../lib/stats.js";

/** bench/ (this file is in bench/app/). */
export const HERE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const ROOT = resolve(HERE, "..");
export const RESULTS_FILE = join(HERE, "results", "app.json");
const EMULATOR_CHILD = join(HERE, "changefeed.child.ts");

/** `--quick`: a short smoke run of every phase with small sizes; bench/results/app.json is left alone. */
export const quick = process.argv.includes("--quick");

const knob = (name: string, full: number, short: number) => envNumber(name, quick ? short : full);

export const config = {
  quick,
  /** Phase 1: sequential GETs per side per round, rounds (interleaved). */
  httpRounds: knob("BENCH_HTTP_ROUNDS", 6, 1),
  httpOps: knob("BENCH_HTTP_OPS", 300, 50),
  /** Phase 2: PUT clients and seconds per run. */
  concurrency: knob("BENCH_CONCURRENCY", 16, 8),
  putSeconds: knob("BENCH_PUT_S", 4, 1),
  /** Phase 3: writes per feed poll delay. */
  triggerWrites: knob("BENCH_TRIGGER_WRITES", 60, 5),
  /** Phase 3 reads the one operation it waits for this often (ms): `observed.at` is the host's stamp, not the read's. */
  triggerReadIntervalMs: 50,
  /** Phase 4: PUTs sent at once per storm, and rounds of (ceiling storm, flow storm) per size. */
  flowSizes: quick ? [1, 20] : [1, 100, 200],
  flowRounds: knob("BENCH_FLOW_ROUNDS", 3, 1),
  /** Single flows (N = 1) per round: one alone says little, so the round sends this many one after another. */
  singleFlowsPerRound: knob("BENCH_SINGLE_FLOWS", 5, 2),
  /** The goal of issue 20: 200 PUTs → every operation Succeeded at ≥ this many flows per second. */
  goalFlowsPerSecond: 60,
  goalAtSize: 200,
  /**
   * How the bench learns that operations ended: it reads operation URLs (GET /operations/{id}) at no more than
   * `statusReadsPerSecond` in all, round-robin over the pending operations (least recently read first), and each
   * operation no more often than every `statusReadMinIntervalMs`. The figures come from the operation documents'
   * own startTime/endTime (the host's clock), so a slower poll delays only when the bench learns, not what it
   * reports.
   */
  statusReadsPerSecond: envNumber("BENCH_STATUS_READS_PER_S", 40),
  statusReadMinIntervalMs: envNumber("BENCH_STATUS_READ_MIN_INTERVAL_MS", 250),
  /** The old measurement's polling, reproduced once as a diagnostic: every operation read every 20 ms. */
  oldPollIntervalMs: 20,
  oldPollSize: quick ? 20 : 100,
  /** Give up on a storm whose operations have not all ended after this long (ms). */
  stormTimeoutMs: envNumber("BENCH_STORM_TIMEOUT_MS", 180_000),
  /** Quiet time after a storm before the next one, so the summary trigger's tail does not overlap it (ms). */
  settleMs: quick ? 500 : 2_000,
  /** After the settle: each stack (host, worker, emulator) under this share of a core over one window… */
  quietCores: 0.1,
  quietWindowMs: 500,
  /** …waited for at most this long. */
  quietMaxMs: 15_000,
  /** CPU of the host, emulator and bench processes is sampled this often during a storm (ms). */
  cpuSampleMs: 250,
  /** How long a host child gets to start and its reactions listener to come up (ms). */
  hostStartTimeoutMs: 60_000,
  /** Phase 5: rounds (servers in alternating order), sequential `noop` requests per server per round. */
  concRounds: knob("BENCH_CONC_ROUNDS", 3, 1),
  concNoopOps: knob("BENCH_CONC_NOOP_OPS", 1000, 100),
  /**
   * Phase 5 and bench/app-single.bench.ts: sequential `noop` requests per server before the first round, not recorded.
   * The dev host's two processes need about 3,000 before their p50 settles (a run of 10 rounds × 1,000 after 300 gave
   * 1.70, 1.15, 0.73, then 0.54–0.69 ms): fewer, and round 1 measures the JIT's tier-up, not the steady state.
   */
  concWarmupOps: knob("BENCH_CONC_WARMUP_OPS", 3000, 200),
  /** Phase 5: `busy` requests per concurrency level per server per round, and the levels (closed-loop clients). */
  concBusyRequests: knob("BENCH_CONC_BUSY_REQUESTS", 1000, 300),
  concLevels: [1, 32, 256],
  /** Phase 5: each `busy` request spins a seeded pseudo-random 0 to this many ms (the handler). */
  busyMaxMs: 10,
  /** Phase 5: the seed of the spins (plus the level), so every server gets the same sequence of work. */
  busySeed: 21,
  /** Phase 5: while `busy` runs, a built-in route of the dev host (answered by the host, not the app) is read this often (ms). */
  hostProbeIntervalMs: 100,
  /** Phase 5: the goal of issue 21 — the dev host adds at most this much to one request's p50 (ms). */
  goalOverheadMs: 0.5,
  /** Phase 5: a server child gets this long to exit after SIGTERM before it is killed (ms). */
  serverStopTimeoutMs: 10_000,
  /**
   * Phase 5, optional: a checkout of the commit before the worker process (with node_modules), whose dev host runs
   * the same fixture as a third server (the "before" column); unset: not measured.
   */
  beforeCheckout: process.env.BENCH_BEFORE_CHECKOUT || null,
};

/** The resource body every PUT sends. */
export const RESOURCE_BODY = { properties: { sku: "basic" } } as const;

/** The app settings every dev host child runs with: the app's defaults, containers made by the bench beforehand. */
export const HOST_SETTINGS: Readonly<Record<string, string>> = { COSMOS_ENSURE_CONTAINERS: "false" };

/** Keep-alive sockets, enough that a storm of 200 PUTs is 200 requests in flight, not a client-side queue. */
export const agent = new HttpAgent({ keepAlive: true, maxSockets: 256 });
/** One request: status, headers, body text and the time it took (ms). */
export const call = (method: string, url: string, body?: unknown) => httpCall(agent, method, url, body);

export type EmulatorStats = Extract<ToParent, { type: "stats" }>;
export type Emulator = EmulatorProcess<EmulatorStats>;

/**
 * An emulator in its own process (in memory, no throughput enforced: the dev host's containers have none), with the
 * app's database and containers created as Bicep would (so the triggers' listeners start at once).
 */
export async function startEmulatorChild(
  def?: DatabaseDefinition,
): Promise<{ emulator: Emulator; connectionString: string }> {
  const emulator = await EmulatorProcess.start<EmulatorStats>(EMULATOR_CHILD, ["emulator"], ROOT);
  const client = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key });
  try {
    await ensureContainers(client, { provisionThroughput: false }, def);
  } finally {
    client.dispose();
  }
  return { emulator, connectionString: `AccountEndpoint=${emulator.endpoint};AccountKey=${emulator.key};` };
}

/**
 * A folder holding the app as `cosmos-feed start .` sees the repository (package.json, host.json, dist/ — linked to
 * the repository's build —, node_modules and src/shared/containers.json, where the dev host finds the containers,
 * the task hub's included), so each dev host child keeps its own .data (timer statuses) and no
 * local.settings.json of the working tree applies. `appRoot`: another build of the app (a baseline's: its dist/,
 * package.json, host.json and containers.json; node_modules, so the dev host and packages, stay this checkout's).
 */
export function appFolder(scratch: string, name: string, appRoot: string = ROOT): string {
  const dir = join(scratch, name);
  mkdirSync(join(dir, "src", "shared"), { recursive: true });
  for (const f of ["package.json", "host.json"]) writeFileSync(join(dir, f), readFileSync(join(appRoot, f)));
  symlinkSync(join(appRoot, "dist"), join(dir, "dist"), "dir");
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  const containers = join("src", "shared", "containers.json");
  symlinkSync(join(appRoot, containers), join(dir, containers), "file");
  return dir;
}

/**
 * What a storm reads of a stack's emulator: its stats (RU meter, CPU) and its process (absent pid: the emulator runs
 * inside the dev host's process, `cosmos-feed start`'s embedded one, whose CPU is the host's).
 */
export interface StackEmulator {
  stats(): Promise<EmulatorStats>;
  child: { pid?: number };
}

export interface HostStack {
  name: string;
  emulator: StackEmulator;
  host: AppChild;
  /** http://127.0.0.1:<port> */
  url: string;
  stop(): Promise<void>;
}

const children: ChildProcess[] = [];

/** A child process killChildren() kills when the bench fails. */
export function trackChild(child: ChildProcess): void {
  children.push(child);
}

/**
 * An emulator child and a dev host child on it, each with its own event loop and core share; `settings` are added
 * to HOST_SETTINGS; `app`, another build of the app and its containers (appFolder). Waits until the reactions
 * trigger's listener runs (unless that function is disabled).
 */
export async function startStack(
  name: string,
  scratch: string,
  settings: Readonly<Record<string, string>> = {},
  app: { root: string; containers: DatabaseDefinition } | undefined = undefined,
): Promise<HostStack> {
  const { emulator, connectionString } = await startEmulatorChild(app?.containers);
  const env = { ...HOST_SETTINGS, ...settings };
  const host = await startAppChild({
    appDir: appFolder(scratch, name, app?.root),
    connectionString,
    env,
    children,
    startTimeoutMs: config.hostStartTimeoutMs,
  });
  if (!/^(true|1)$/i.test(env["AzureWebJobs.reactToResources.Disabled"] ?? "")) {
    const deadline = Date.now() + config.hostStartTimeoutMs;
    // The dev host logs this line only when the listener failed first; with the containers made beforehand it
    // starts at once, and then the lease container shows its lease.
    while (!(await reactionsListening(host))) {
      if (Date.now() > deadline)
        throw new Error(`${name}: the reactions trigger did not start:\n${host.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    name,
    emulator,
    host,
    url: host.baseUrl,
    async stop() {
      if (host.child.exitCode === null && host.child.signalCode === null) host.child.kill("SIGTERM");
      await host.exited;
      await emulator.close();
    },
  };
}

/** The reactions trigger holds at least one lease (GET /api/admin/leases: the app's own operational read). */
export async function reactionsListening(host: AppChild): Promise<boolean> {
  const res = await call("GET", `${host.baseUrl}/api/admin/leases`);
  if (res.status !== 200) return false;
  const body = JSON.parse(res.text) as { value: { function: string; leases: { owner?: string | null }[] }[] };
  return body.value.some((p) => p.function === "reactToResources" && p.leases.some((l) => !!l.owner));
}

/** Kills every host child still running (the bench's last resort on an error). */
export function killChildren(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
}
