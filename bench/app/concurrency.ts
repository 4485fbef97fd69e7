/**
 * Phase 5: the dev host's app in its worker process vs the SAME handler module on bare node:http, each server a
 * child process of its own, this process only the client (issue 21: "p50 and p99 at 1, 32 and 256 concurrent …
 * keep the single-request overhead ≤ 0.5 ms"). Optionally a third server: the dev host of a checkout from before
 * the worker process (config.beforeCheckout), where the app ran in the host's own process.
 *
 *  - single request: `noop`, sequential keep-alive requests → p50/p99; overhead = dev host p50 − bare p50.
 *  - `busy` (spins 0–busyMaxMs ms, the same seeded sequence for every server) with N closed-loop clients (each
 *    sends its next request when the previous one answered) → p50, p99, requests/s; while it runs, a built-in route
 *    of the dev host (`/_dev/api/settings`, answered by the host process) is read every hostProbeIntervalMs.
 *  - Rounds run the servers in alternating order per scenario; figures are medians over rounds. CPU per request of
 *    the server process and of the app's process (/proc/<pid>/stat) over each run.
 */
import { Agent } from "node:http";
import { git } from "../lib/git.js";
import { httpCall } from "../lib/http-call.js";
import { seededRandom } from "../lib/prng.js";
import { median, percentile, round2 } from "../lib/stats.js";
import {
  type ServerChild,
  type ServerKind,
  startBareServer,
  startDevhostServer,
  writeFixture,
} from "./concurrency-servers.js";
import { config } from "./setup.js";

/** One run on one server. */
export interface Run {
  /** The fastest tenth's bound: what a request costs when nothing else on the machine gets in its way. */
  p10Ms: number;
  p50Ms: number;
  p99Ms: number;
  requestsPerSecond: number;
  /** CPU ms per request of the server process, and of the app's process when it is another one (else null). */
  serverCpuMsPerRequest: number | null;
  appCpuMsPerRequest: number | null;
  /** The host's built-in route read while `busy` ran (dev hosts only). */
  hostProbe: { p50Ms: number; p99Ms: number; maxMs: number; reads: number } | null;
}

/** Medians over rounds of one server's runs of one scenario. */
export interface ServerFigures {
  p50Ms: number;
  p99Ms: number;
  requestsPerSecond: number;
  /** server + app process CPU per request (ms). */
  cpuMsPerRequest: number | null;
  serverCpuMsPerRequest: number | null;
  appCpuMsPerRequest: number | null;
  hostProbeP50Ms: number | null;
  hostProbeP99Ms: number | null;
  hostProbeMaxMs: number | null;
}

export interface ConcurrencyResult {
  rounds: number;
  noopRequestsPerRound: number;
  busyRequestsPerRound: number;
  busyMaxMs: number;
  /** The mean spin of the sequence every server got, and what one core allows at that mean. */
  busyMeanSpinMs: number;
  oneCoreRequestsPerSecond: number;
  before: { checkout: string; commit: string } | null;
  single: {
    devhost: ServerFigures;
    bare: ServerFigures;
    before: ServerFigures | null;
    /** Median over rounds of (dev host p50 − bare p50), ms. */
    overheadP50Ms: number;
    overheadP99Ms: number;
    goalOverheadMs: number;
    met: boolean;
  };
  busy: {
    concurrency: number;
    devhost: ServerFigures;
    bare: ServerFigures;
    before: ServerFigures | null;
    /** Medians over rounds of per-round dev host ÷ bare ratios. */
    ratioP50: number;
    ratioP99: number;
    ratioRequestsPerSecond: number;
  }[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The spins (ms) of one level's runs: the same sequence for every server and round. */
function spinsFor(level: number, n: number): number[] {
  const next = seededRandom(config.busySeed + level);
  return Array.from({ length: n }, () => Math.round(next() * config.busyMaxMs * 1000) / 1000);
}

async function get(agent: Agent, url: string): Promise<number> {
  const res = await httpCall(agent, "GET", url);
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${res.text.slice(0, 200)}`);
  return res.ms;
}

/** Closed loop (also bench/app-single.bench.ts): `clients` clients take the next path from `paths` until none is left; `clients` = 1 is sequential. */
export async function run(
  server: ServerChild,
  clients: number,
  paths: readonly string[],
  probe: boolean,
): Promise<Run> {
  // Fresh sockets per run, so none the server closed while idle (keep-alive timeout) is reused mid-run.
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    // Open every client's socket first (not timed).
    for (let i = 0; i < 3; i++)
      await Promise.all(Array.from({ length: clients }, () => get(agent, `${server.url}/api/noop`)));
    const ms: number[] = [];
    const probes: number[] = [];
    let next = 0;
    let done = false;
    const cpu0 = server.cpuMs();
    const began = performance.now();
    const probing = (async () => {
      if (!probe) return;
      while (!done) {
        probes.push(await get(probeAgent, `${server.url}/_dev/api/settings`));
        await sleep(config.hostProbeIntervalMs);
      }
    })();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (next < paths.length) {
          const path = paths[next++];
          ms.push(await get(agent, `${server.url}${path}`));
        }
      }),
    );
    const wallMs = performance.now() - began;
    const cpu1 = server.cpuMs();
    done = true;
    await probing;
    const perRequest = (a: number | null, b: number | null) =>
      a === null || b === null ? null : (b - a) / paths.length;
    return {
      p10Ms: percentile(ms, 10),
      p50Ms: percentile(ms, 50),
      p99Ms: percentile(ms, 99),
      requestsPerSecond: (paths.length * 1000) / wallMs,
      serverCpuMsPerRequest: perRequest(cpu0.server, cpu1.server),
      appCpuMsPerRequest: perRequest(cpu0.app, cpu1.app),
      hostProbe: probe
        ? {
            p50Ms: percentile(probes, 50),
            p99Ms: percentile(probes, 99),
            maxMs: Math.max(...probes),
            reads: probes.length,
          }
        : null,
    };
  } finally {
    agent.destroy();
    probeAgent.destroy();
  }
}

const medianOf = (runs: Run[], pick: (r: Run) => number | null | undefined): number | null => {
  const values = runs.map(pick).filter((v): v is number => typeof v === "number");
  return values.length === runs.length ? round2(median(values)) : null;
};

function summarize(runs: Run[]): ServerFigures {
  return {
    p50Ms: medianOf(runs, (r) => r.p50Ms) ?? Number.NaN,
    p99Ms: medianOf(runs, (r) => r.p99Ms) ?? Number.NaN,
    requestsPerSecond: Math.round(median(runs.map((r) => r.requestsPerSecond))),
    cpuMsPerRequest: medianOf(runs, (r) =>
      r.serverCpuMsPerRequest === null ? null : r.serverCpuMsPerRequest + (r.appCpuMsPerRequest ?? 0),
    ),
    serverCpuMsPerRequest: medianOf(runs, (r) => r.serverCpuMsPerRequest),
    appCpuMsPerRequest: medianOf(runs, (r) => r.appCpuMsPerRequest),
    hostProbeP50Ms: medianOf(runs, (r) => r.hostProbe?.p50Ms),
    hostProbeP99Ms: medianOf(runs, (r) => r.hostProbe?.p99Ms),
    hostProbeMaxMs: medianOf(runs, (r) => r.hostProbe?.maxMs),
  };
}

/** Per-round values of `f(devhost run, bare run)`, medianed. */
const pairedMedian = (dev: Run[], bare: Run[], f: (d: Run, b: Run) => number) =>
  round2(median(dev.map((d, i) => f(d, bare[i]))));

export async function concurrencyPhase(): Promise<ConcurrencyResult> {
  const fixture = writeFixture();
  const servers: ServerChild[] = [];
  try {
    servers.push(await startDevhostServer("devhost", fixture));
    servers.push(await startBareServer(fixture));
    if (config.beforeCheckout)
      servers.push(await startDevhostServer("before", fixture, config.beforeCheckout));
    const noopPaths = Array.from({ length: config.concNoopOps }, () => "/api/noop");
    const warmupPaths = Array.from({ length: config.concWarmupOps }, () => "/api/noop");
    const spins = new Map(config.concLevels.map((c) => [c, spinsFor(c, config.concBusyRequests)]));
    const busyPaths = new Map([...spins].map(([c, s]) => [c, s.map((ms) => `/api/busy?ms=${ms}`)]));
    // Warm-up (not recorded): the JIT, the module caches, the sockets.
    for (const s of servers) {
      await run(s, 1, warmupPaths, false);
      await run(s, 4, busyPaths.get(config.concLevels[0])?.slice(0, 40) ?? [], false);
    }
    type Runs = Record<ServerKind, Run[]>;
    const empty = (): Runs => ({ devhost: [], bare: [], before: [] });
    const single = empty();
    const busy = new Map(config.concLevels.map((c) => [c, empty()]));
    for (let r = 0; r < config.concRounds; r++) {
      // Alternate which goes first, so drift (GC, the shared machine's load) hits every server alike.
      const order = r % 2 === 0 ? servers : [...servers].reverse();
      for (const s of order) single[s.kind].push(await run(s, 1, noopPaths, false));
      for (const c of config.concLevels) {
        const paths = busyPaths.get(c) ?? [];
        for (const s of order) busy.get(c)?.[s.kind].push(await run(s, c, paths, s.kind !== "bare"));
      }
      console.log(`   round ${r + 1}/${config.concRounds} done`);
    }
    const before = config.beforeCheckout;
    const allSpins = [...spins.values()].flat();
    const meanSpin = allSpins.reduce((a, b) => a + b, 0) / allSpins.length;
    const overheadP50Ms = pairedMedian(single.devhost, single.bare, (d, b) => d.p50Ms - b.p50Ms);
    return {
      rounds: config.concRounds,
      noopRequestsPerRound: config.concNoopOps,
      busyRequestsPerRound: config.concBusyRequests,
      busyMaxMs: config.busyMaxMs,
      busyMeanSpinMs: round2(meanSpin),
      oneCoreRequestsPerSecond: Math.round(1000 / meanSpin),
      before: before
        ? { checkout: before, commit: git(`-C ${before} rev-parse --short HEAD`) || "unknown" }
        : null,
      single: {
        devhost: summarize(single.devhost),
        bare: summarize(single.bare),
        before: before ? summarize(single.before) : null,
        overheadP50Ms,
        overheadP99Ms: pairedMedian(single.devhost, single.bare, (d, b) => d.p99Ms - b.p99Ms),
        goalOverheadMs: config.goalOverheadMs,
        met: overheadP50Ms <= config.goalOverheadMs,
      },
      busy: config.concLevels.map((c) => {
        const runs = busy.get(c) ?? empty();
        return {
          concurrency: c,
          devhost: summarize(runs.devhost),
          bare: summarize(runs.bare),
          before: before ? summarize(runs.before) : null,
          ratioP50: pairedMedian(runs.devhost, runs.bare, (d, b) => d.p50Ms / b.p50Ms),
          ratioP99: pairedMedian(runs.devhost, runs.bare, (d, b) => d.p99Ms / b.p99Ms),
          ratioRequestsPerSecond: pairedMedian(
            runs.devhost,
            runs.bare,
            (d, b) => d.requestsPerSecond / b.requestsPerSecond,
          ),
        };
      }),
    };
  } catch (e) {
    for (const s of servers) console.error(`--- ${s.kind} output (tail) ---\n${s.tail()}`);
    throw e;
  } finally {
    for (const s of servers) await s.stop();
    fixture.remove();
  }
}
