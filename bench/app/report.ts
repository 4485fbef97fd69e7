/** App bench: the method text written into the results, and the notes — each computed from the run's numbers. */
import os from "node:os";
import { git } from "../lib/git.js";
import { round1, round2 } from "../lib/stats.js";
import type { ConcurrencyResult, ServerFigures } from "./concurrency.js";
import type { FlowPhase } from "./flow-runs.js";
import type { HttpResult } from "./http.js";
import type { PutRun, TriggerRun } from "./put-trigger.js";
import { config } from "./setup.js";

export const METHOD = {
  processes:
    "Every emulator runs in a child process (bench/changefeed.child.ts emulator: in memory, no throughput " +
    "enforced, the app's containers created beforehand without throughput, as the dev host makes them). Phases " +
    "2–4 drive dev host children (`cosmos-feed start <app> --no-build --port 0 --cosmos <connection string>`, " +
    "the compiled app, each with its own emulator child) over HTTP from this process; phase 1 compares two " +
    "servers in this process.",
  flows:
    "Per round and size N (1, 100, 200): N PUTs sent at once (keep-alive sockets ≥ N; each to its own " +
    "subscription, so the lock refuses none) to a ceiling host whose reactions and summaries triggers are disabled " +
    "(AzureWebJobs.<name>.Disabled: the PUTs alone) and to the app, in alternating order; after each storm " +
    "settleMs, then until every host, worker and emulator is under quietCores of a core over quietWindowMs (at " +
    "most quietMaxMs), so no storm's tail runs into the next. Once every " +
    "PUT answered, the bench reads the operation URLs they returned at most statusReadsPerSecond in all, " +
    "round-robin (least recently read first), each at most every statusReadMinIntervalMs, until every operation " +
    "ended. flows/s = N ÷ (latest operation endTime − first PUT sent); accepted → Succeeded = endTime − startTime " +
    "per operation (both stamped by the host, same machine clock), so the reading rate changes when the bench " +
    "learns the outcome, not the figures. N = 1 is sent singleFlowsPerRound times per round. Rates are medians " +
    "over storms, latencies percentiles pooled over all operations of a size. CPU: /proc/<pid>/stat of the host " +
    "child alone and of the processes below it (the app's worker process), the emulator child's process.cpuUsage, " +
    "this process's. Cosmos requests and RU: the emulator's meter.",
  oldPolling:
    "Diagnostic: the same storm with every operation read in a loop with 20 ms pauses (the old bench's " +
    "settle()), against the paced reads at the same N, in the same run.",
  concurrency:
    "Phase 5: a fixture app (written under .data/bench-apps, no Cosmos DB function) with HTTP functions noop " +
    "(answers 'ok') and busy (spins the ms its query names, then answers), served by the dev host " +
    "(`cosmos-feed start <fixture> --no-build --port 0`: the host process and its worker process) and by the " +
    "SAME handler module on bare node:http in a child of its own (bench/app/bare-child.ts, the @azure/functions " +
    "HttpRequest/HttpResponse built as in phase 1); optionally by the dev host of a checkout from before the " +
    "worker process (BENCH_BEFORE_CHECKOUT). This process is only the client, on fresh keep-alive sockets per " +
    "run. Single request: concNoopOps sequential noop GETs → p50/p99; overhead = median over rounds of (dev host " +
    "p50 − bare p50). busy: the spins are drawn 0–busyMaxMs ms from a seeded generator (busySeed + level), the " +
    "same sequence for every server and round; N closed-loop clients (N = 1, 32, 256) each send the next " +
    "request when the previous one answered, concBusyRequests per run → p50, p99, requests/s. While busy runs, " +
    "the dev host's built-in route /_dev/api/settings (answered by the host process) is read every " +
    "hostProbeIntervalMs. Per round each scenario runs on every server, in alternating order; figures are " +
    "medians over rounds, ratios medians of per-round ratios. CPU per request: /proc/<pid>/stat of the server " +
    "process and of the app's process (the dev host's worker) over each run.",
};

const metText = (ok: boolean) => (ok ? "met" : "not met");

/** "p50 1.2 ms, p99 3.4 ms, 180 req/s" of one server in one scenario. */
const figures = (f: ServerFigures) => `p50 ${f.p50Ms} ms, p99 ${f.p99Ms} ms, ${f.requestsPerSecond} req/s`;

/** Phase 5's notes: the single-request overhead against the goal, and each concurrency level. */
export function concurrencyNotes(c: ConcurrencyResult): string[] {
  const { single } = c;
  const cpu = (f: ServerFigures) =>
    f.appCpuMsPerRequest === null
      ? `${f.cpuMsPerRequest ?? "?"} ms`
      : `${f.cpuMsPerRequest} ms (host ${f.serverCpuMsPerRequest}, worker ${f.appCpuMsPerRequest})`;
  const notes = [
    `Single-request overhead ${single.overheadP50Ms} ms: goal ≤ ${single.goalOverheadMs} ms ` +
      `${metText(single.met)} (noop through the dev host p50 ${single.devhost.p50Ms} ms, p99 ${single.devhost.p99Ms} ms; ` +
      `the same handler on bare node:http p50 ${single.bare.p50Ms} ms, p99 ${single.bare.p99Ms} ms; median of ` +
      `${c.rounds} rounds × ${c.noopRequestsPerRound}). CPU per request: dev host ${cpu(single.devhost)}, bare ` +
      `${cpu(single.bare)}.` +
      (single.before
        ? ` Before the worker process (${c.before?.commit}, the app in the host's process): p50 ` +
          `${single.before.p50Ms} ms, overhead ${round2(single.before.p50Ms - single.bare.p50Ms)} ms, CPU ${cpu(single.before)}.`
        : ""),
  ];
  for (const b of c.busy) {
    const probe = (f: ServerFigures | null) =>
      f?.hostProbeP50Ms == null ? "?" : `p50 ${f.hostProbeP50Ms} ms, max ${f.hostProbeMaxMs} ms`;
    notes.push(
      `busy (spins 0–${c.busyMaxMs} ms, mean ${c.busyMeanSpinMs} ms: one core allows ${c.oneCoreRequestsPerSecond} ` +
        `req/s) at ${b.concurrency} concurrent: dev host ${figures(b.devhost)}; bare ${figures(b.bare)} → p99 ` +
        `×${b.ratioP99}, req/s ×${b.ratioRequestsPerSecond}` +
        (b.before ? `; before the worker process ${figures(b.before)}` : "") +
        `. The dev host's own route while the app spun: ${probe(b.devhost)}` +
        (b.before ? ` (before the worker process: ${probe(b.before)})` : "") +
        ".",
    );
  }
  if (!c.before) {
    notes.push(
      "The dev host before the worker process was not measured in this run (BENCH_BEFORE_CHECKOUT unset); issue 21 " +
        "reports ~200 req/s and p99 6–7.6 s for 128 concurrent requests to a handler spinning 0–10 ms on it.",
    );
  }
  return notes;
}

export function notesFor(
  http: HttpResult,
  put: { spreadOver100: PutRun; oneHot: PutRun },
  trigger: TriggerRun[],
  flows: FlowPhase,
  concurrency: ConcurrencyResult,
): string[] {
  const notes: string[] = [];
  const goal = flows.summaries.find((s) => s.size === config.goalAtSize);
  if (goal) {
    notes.push(
      `${goal.size} PUTs at once → every operation Succeeded: ${goal.flowsPerSecond} flows/s (median of ${goal.storms}; ` +
        `${goal.flowsPerSecondMin}–${goal.flowsPerSecondMax}), goal ≥ ${config.goalFlowsPerSecond}: ` +
        `${metText(goal.flowsPerSecond >= config.goalFlowsPerSecond)}; the same PUTs alone were answered at ` +
        `${goal.ceilingPutAnswersPerSecond}/s, so the flows ran at ${goal.flowsOverCeiling}× the HTTP ceiling.`,
    );
  }
  for (const s of flows.summaries) {
    notes.push(
      `${s.size} at once: ${s.flowsPerSecond} flows/s (${s.flowsPerSecondAfterTrigger}/s from the trigger's first ` +
        `record), accepted → Succeeded p50 ${s.acceptedToSucceededP50Ms} ms, p95 ${s.acceptedToSucceededP95Ms} ms ` +
        `(accepted → the trigger's record p50 ${s.acceptedToTriggerP50Ms} ms, its record → Succeeded p50 ` +
        `${s.orchestrationP50Ms} ms); ${s.succeeded}/${s.accepted} Succeeded; the bench read ${s.statusReads} ` +
        `operation URLs (${s.statusReadsPerFlow} per flow, ${s.statusReadsPerSecond}/s) against ` +
        `${s.cosmosRequestsPerFlow} Cosmos requests per flow by the app (${s.taskHubRequestsPerFlow} on the task hub, ` +
        `${s.taskHubRuPerFlow} RU there).`,
    );
  }
  const g = goal;
  if (g && g.hostCpuMsPerFlow !== null) {
    notes.push(
      `Where the time goes at ${g.size} at once: the dev host used ${g.hostCores} cores (its own process and the ` +
        `app's worker process together) and the emulator ${g.emulatorCores} from the first PUT to the last ` +
        `Succeeded; per flow the host's process spent ${g.hostProcessCpuMsPerFlow} ms of CPU (HTTP, triggers, the ` +
        `task hub, the bench's reads) and the worker process ${g.workerCpuMsPerFlow} ms (the app's handlers, ` +
        `orchestrator replays and activities), ${g.hostCpuMsPerFlow} ms in all. Each is one event loop: the busier, ` +
        `the ${g.busiestLoop}, allows at most ${g.oneHostCoreFlowsPerSecond} flows/s at that cost on a core of its ` +
        `own (${config.goalFlowsPerSecond} flows/s needs ≤ ${round1(1000 / config.goalFlowsPerSecond)} ms in each), ` +
        `and all three processes share ${os.cpus().length} cores.`,
    );
  }
  const { every20ms: old, paced, size } = flows.oldPolling;
  notes.push(
    `The old bench's poll (every operation every 20 ms), from outside, ${size} at once: ${old.flowsPerSecond} flows/s ` +
      `with ${old.statusReads} reads (${old.statusReadsPerFlow} per flow, ${old.statusReadsPerSecond}/s), against ` +
      `${paced.flowsPerSecond} flows/s with ${paced.statusReads} paced reads in the same run (host CPU per flow ` +
      `${old.cpu.hostMsPerFlow ?? "?"} ms against ${paced.cpu.hostMsPerFlow ?? "?"} ms): the 20 ms poll ran the flows at ` +
      `${round2((old.flowsPerSecond ?? 0) / Math.max(0.1, paced.flowsPerSecond ?? 0))}× the paced rate.`,
  );
  notes.push(
    `HTTP GET through the dev host: p50 ${http.devhostP50Ms} ms vs ${http.bareP50Ms} ms for the same handler on ` +
      `bare node:http: ${http.addedP50Ms} ms added (goal ≤ ${http.goalAddedMs} ms: ` +
      `${metText(http.addedP50Ms <= http.goalAddedMs)}), ${http.ratioP50}× at p50 and ${http.ratioP99}× at p99.`,
    `PUT throughput with ${config.concurrency} clients: ${put.spreadOver100.acceptedPerSecond}/s over 100 ` +
      `subscriptions vs ${put.oneHot.acceptedPerSecond}/s on one (the lock serializes it: ` +
      `${Math.round(put.oneHot.contendedShare * 100)} % answered 409).`,
    ...trigger.map(
      (t) =>
        `Write → trigger at feedPollDelay ${t.feedPollDelayMs} ms: p50 ${t.p50Ms} ms (goal ≤ ${t.goalP50Ms} ms: ${metText(t.met)}).`,
    ),
    ...concurrencyNotes(concurrency),
  );
  return notes;
}

export { git };
