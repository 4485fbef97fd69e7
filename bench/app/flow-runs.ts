/**
 * Phase 4's runs: per round and size, the same PUT storm against a ceiling host (the reactions trigger disabled:
 * the PUTs alone, nothing started) and against the app (every PUT's operation followed to its end), in alternating
 * order; then, once, the old bench's polling reproduced from outside as a diagnostic. Summaries are medians over
 * rounds (rates) and percentiles pooled over every operation of a size (latencies).
 */
import { median, percentile, round1, round2 } from "../lib/stats.js";
import { waitUntilQuiet } from "./cpu.js";
import { PACED, type StormResult, type StormRun, storm } from "./flows.js";
import { config, type HostStack } from "./setup.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FlowSummary {
  size: number;
  /** Storms of this size on the app (N = 1: singleFlowsPerRound per round, one after another). */
  storms: number;
  accepted: number;
  succeeded: number;
  /** Median over storms of N ÷ (last endTime − first PUT sent). */
  flowsPerSecond: number;
  flowsPerSecondMin: number;
  flowsPerSecondMax: number;
  /** Median over storms of N ÷ (last endTime − first observed.at): without the first feed poll's wait. */
  flowsPerSecondAfterTrigger: number;
  /**
   * Pooled over every operation of this size: accepted → Succeeded, accepted → the trigger's record (feed poll and
   * the trigger's queue), the trigger's record → Succeeded (the orchestration).
   */
  acceptedToSucceededP50Ms: number;
  acceptedToSucceededP95Ms: number;
  acceptedToTriggerP50Ms: number;
  orchestrationP50Ms: number;
  /** The same storm's PUT answers per second: on the app, and on the ceiling host (PUTs alone). */
  putAnswersPerSecond: number;
  ceilingPutAnswersPerSecond: number;
  /** flowsPerSecond ÷ ceilingPutAnswersPerSecond. */
  flowsOverCeiling: number;
  /** The measurement's own cost: operation reads made, per flow, per second of storm. */
  statusReads: number;
  statusReadsPerFlow: number;
  statusReadsPerSecond: number;
  /**
   * Medians over storms, first PUT → last endTime: host (its worker process included) and emulator CPU ms per
   * wall ms (1 = one core busy the whole time), host CPU ms per flow; the same per flow for the dev host's process
   * alone and for the app's worker process, each one event loop; and what one busy core allows for the busier of
   * the two at its cost (1000 ÷ it).
   */
  hostCores: number | null;
  emulatorCores: number;
  hostCpuMsPerFlow: number | null;
  hostProcessCpuMsPerFlow: number | null;
  workerCpuMsPerFlow: number | null;
  busiestLoop: "host process" | "worker process" | null;
  oneHostCoreFlowsPerSecond: number | null;
  /** Median per flow: Cosmos DB requests on all containers, and on the task hub container. */
  cosmosRequestsPerFlow: number;
  taskHubRequestsPerFlow: number;
  taskHubRuPerFlow: number;
}

function summarize(size: number, flows: StormRun[], ceiling: StormResult[]): FlowSummary {
  const r = flows.map((f) => f.result);
  const pooled = (k: keyof StormRun["samples"]) => flows.flatMap((f) => f.samples[k]);
  const reads = r.reduce((a, x) => a + x.statusReads, 0);
  const accepted = r.reduce((a, x) => a + x.accepted, 0);
  const fps = r.map((x) => x.flowsPerSecond ?? 0);
  const flowsPerSecond = round1(median(fps));
  const ceilingPut = round1(median(ceiling.map((x) => x.putAnswersPerSecond)));
  const withHost = r.filter((x) => x.cpu.host !== null);
  const hostMsPerFlow = withHost.length ? median(withHost.map((x) => x.cpu.hostMsPerFlow ?? 0)) : null;
  const hostProcessMsPerFlow = withHost.length
    ? median(withHost.map((x) => x.cpu.hostProcessMsPerFlow ?? 0))
    : null;
  const workerMsPerFlow = withHost.length ? median(withHost.map((x) => x.cpu.workerMsPerFlow ?? 0)) : null;
  const busiestMs =
    hostProcessMsPerFlow === null || workerMsPerFlow === null
      ? null
      : Math.max(hostProcessMsPerFlow, workerMsPerFlow);
  const taskHub = (x: StormResult) =>
    Object.entries(x.cosmosPerFlow).find(([k]) => k.endsWith("durable-tasks"))?.[1] ?? { requests: 0, ru: 0 };
  return {
    size,
    storms: r.length,
    accepted,
    succeeded: r.reduce((a, x) => a + (x.succeeded ?? 0), 0),
    flowsPerSecond,
    flowsPerSecondMin: Math.min(...fps),
    flowsPerSecondMax: Math.max(...fps),
    flowsPerSecondAfterTrigger: round1(median(r.map((x) => x.flowsPerSecondAfterTrigger ?? 0))),
    acceptedToSucceededP50Ms: percentile(pooled("acceptedToSucceededMs"), 50),
    acceptedToSucceededP95Ms: percentile(pooled("acceptedToSucceededMs"), 95),
    orchestrationP50Ms: percentile(pooled("orchestrationMs"), 50),
    acceptedToTriggerP50Ms: percentile(pooled("acceptedToTriggerMs"), 50),
    putAnswersPerSecond: round1(median(r.map((x) => x.putAnswersPerSecond))),
    ceilingPutAnswersPerSecond: ceilingPut,
    flowsOverCeiling: round2(flowsPerSecond / Math.max(0.1, ceilingPut)),
    statusReads: reads,
    statusReadsPerFlow: round2(reads / Math.max(1, accepted)),
    statusReadsPerSecond: round1(median(r.map((x) => x.statusReadsPerSecond))),
    hostCores: withHost.length ? round2(median(withHost.map((x) => x.cpu.hostCores ?? 0))) : null,
    emulatorCores: round2(median(r.map((x) => x.cpu.emulatorCores))),
    hostCpuMsPerFlow: hostMsPerFlow === null ? null : round1(hostMsPerFlow),
    hostProcessCpuMsPerFlow: hostProcessMsPerFlow === null ? null : round1(hostProcessMsPerFlow),
    workerCpuMsPerFlow: workerMsPerFlow === null ? null : round1(workerMsPerFlow),
    busiestLoop:
      hostProcessMsPerFlow === null || workerMsPerFlow === null
        ? null
        : hostProcessMsPerFlow >= workerMsPerFlow
          ? "host process"
          : "worker process",
    oneHostCoreFlowsPerSecond: busiestMs ? round1(1000 / busiestMs) : null,
    cosmosRequestsPerFlow: round1(
      median(r.map((x) => Object.values(x.cosmosPerFlow).reduce((a, c) => a + c.requests, 0))),
    ),
    taskHubRequestsPerFlow: round1(median(r.map((x) => taskHub(x).requests))),
    taskHubRuPerFlow: round1(median(r.map((x) => taskHub(x).ru))),
  };
}

export interface FlowPhase {
  summaries: FlowSummary[];
  /** The old bench's poll (every operation every 20 ms), from outside, against the paced poll at the same size. */
  oldPolling: { size: number; every20ms: StormResult; paced: StormResult };
  rounds: { round: number; size: number; ceiling: StormResult[]; flows: StormResult[] }[];
}

/** Runs phase 4 on `ceiling` (reactions trigger disabled) and `app` (the app as it is). */
export async function flowPhase(ceiling: HostStack, app: HostStack): Promise<FlowPhase> {
  // Between storms: the fixed settle, then until both hosts and their emulators are quiet.
  const settle = async () => {
    await sleep(config.settleMs);
    await waitUntilQuiet([ceiling, app]);
  };
  // Warm-up (connections, JIT, the app's context): one flow each, not recorded.
  await storm(ceiling, 1, "warm", { kind: "none" });
  await storm(app, 1, "warm", PACED);
  await settle();
  const bySize = new Map<number, { flows: StormRun[]; ceiling: StormResult[] }>();
  const rounds: FlowPhase["rounds"] = [];
  for (let round = 0; round < config.flowRounds; round++) {
    for (const size of config.flowSizes) {
      const repeats = size === 1 ? config.singleFlowsPerRound : 1;
      const runCeiling = async () => {
        const out: StormResult[] = [];
        for (let i = 0; i < repeats; i++) {
          out.push((await storm(ceiling, size, `c${round}-${size}-${i}`, { kind: "none" })).result);
          await settle();
        }
        return out;
      };
      const runApp = async () => {
        const out: StormRun[] = [];
        for (let i = 0; i < repeats; i++) {
          out.push(await storm(app, size, `f${round}-${size}-${i}`, PACED));
          await settle();
        }
        return out;
      };
      // Alternate which host goes first, so drift (GC, load, the emulators' growing data) hits both alike.
      let c: StormResult[];
      let f: StormRun[];
      if (round % 2 === 0) {
        c = await runCeiling();
        f = await runApp();
      } else {
        f = await runApp();
        c = await runCeiling();
      }
      const entry = bySize.get(size) ?? { flows: [], ceiling: [] };
      entry.flows.push(...f);
      entry.ceiling.push(...c);
      bySize.set(size, entry);
      rounds.push({ round, size, ceiling: c, flows: f.map((x) => x.result) });
      const last = f[f.length - 1].result;
      console.log(
        `  round ${round + 1}, ${size} at once: ${last.flowsPerSecond} flows/s (PUTs alone ${c[c.length - 1].putAnswersPerSecond}/s), ` +
          `accepted → Succeeded p50 ${last.acceptedToSucceededP50Ms} ms p95 ${last.acceptedToSucceededP95Ms} ms, ` +
          `${last.statusReads} status reads`,
      );
    }
  }
  const size = config.oldPollSize;
  const paced = (await storm(app, size, "paced-vs-old", PACED)).result;
  await settle();
  const every20ms = (await storm(app, size, "old", { kind: "every20ms" })).result;
  await settle();
  console.log(
    `  ${size} at once, read every 20 ms (the old bench's poll): ${every20ms.flowsPerSecond} flows/s with ` +
      `${every20ms.statusReads} reads; paced: ${paced.flowsPerSecond} flows/s with ${paced.statusReads} reads`,
  );
  return {
    summaries: [...bySize.entries()].map(([s, e]) => summarize(s, e.flows, e.ceiling)),
    oldPolling: { size, every20ms, paced },
    rounds,
  };
}
