/** Durable bench: the goals of issue #20 judged from this run's numbers, the conclusions, the method text. */
import { git } from "../lib/git.js";
import { round1 } from "../lib/stats.js";
import type { memoryScenario } from "./memory.js";
import type { peerScenarios } from "./peer.js";
import type { burstScenario, fanOutScenario, sequenceScenario, slowNeighbourScenario } from "./scenarios.js";
import { config } from "./setup.js";

const fmt = (n: number) => n.toLocaleString("en-US");

export interface Results {
  sequence: Awaited<ReturnType<typeof sequenceScenario>>;
  burst: Awaited<ReturnType<typeof burstScenario>>;
  fanOut: Awaited<ReturnType<typeof fanOutScenario>>;
  slowNeighbour: Awaited<ReturnType<typeof slowNeighbourScenario>>;
  memory: Awaited<ReturnType<typeof memoryScenario>>;
  peer: Awaited<ReturnType<typeof peerScenarios>>;
}

/** The goals of issue #20 ("Measured"), for this 2-core machine with the emulator in a separate process. */
export const GOALS = {
  sequenceP50Ms: 15,
  burstCompletedPerSec: 150,
  fanOutSeconds: 2,
  slowAddsP50Ms: 50,
  ruPerOrchestration: 60,
  requestsPerOrchestration: 10,
  rssGrowthPct: 10,
} as const;

export interface Goal {
  goal: string;
  measured: number | null;
  /** true / false, or null when the run could not decide it (the note says why). */
  met: boolean | null;
  note?: string;
}

export function goalsOf(r: Results): Record<string, Goal> {
  const le = (v: number | null | undefined, limit: number) =>
    v === null || v === undefined || Number.isNaN(v) ? false : v <= limit;
  const s = r.sequence;
  const mem = r.memory;
  const growthPct = mem.rssRatio === null ? null : round1((mem.rssRatio - 1) * 100);
  const all = s.notCompleted === 0 && s.wrongOutputs === 0;
  return {
    sequenceP50: {
      goal: `3-activity sequence p50 ≤ ${GOALS.sequenceP50Ms} ms`,
      measured: s.latencyMs.p50,
      met: all && le(s.latencyMs.p50, GOALS.sequenceP50Ms),
    },
    burstCompletedPerSec: {
      goal: `${r.burst.orchestrations} started at once: ≥ ${GOALS.burstCompletedPerSec} completed/s`,
      measured: r.burst.completedPerSec,
      met:
        r.burst.completedCorrectly === r.burst.orchestrations &&
        r.burst.completedPerSec >= GOALS.burstCompletedPerSec,
    },
    fanOut: {
      goal: `fan-out of ${fmt(r.fanOut.activities)} activities ≤ ${GOALS.fanOutSeconds} s`,
      measured: r.fanOut.seconds,
      met: r.fanOut.correctOutput && le(r.fanOut.seconds, GOALS.fanOutSeconds),
      ...(r.fanOut.completed ? {} : { note: `not completed within ${r.fanOut.timeoutSeconds} s` }),
    },
    slowActivity: {
      goal: `a ${r.slowNeighbour.activityMs / 1000} s activity adds ≤ ${GOALS.slowAddsP50Ms} ms to other orchestrations' p50`,
      measured: r.slowNeighbour.addedP50Ms,
      met: r.slowNeighbour.notCompleted === 0 && le(r.slowNeighbour.addedP50Ms, GOALS.slowAddsP50Ms),
    },
    ruPerOrchestration: {
      goal: `≤ ${GOALS.ruPerOrchestration} RU per 3-activity orchestration on the task hub container`,
      measured: s.cost.hubContainer.ru,
      met: le(s.cost.hubContainer.ru, GOALS.ruPerOrchestration),
    },
    requestsPerOrchestration: {
      goal: `≤ ${GOALS.requestsPerOrchestration} requests per 3-activity orchestration on the task hub container`,
      measured: s.cost.hubContainer.requests,
      met: le(s.cost.hubContainer.requests, GOALS.requestsPerOrchestration),
    },
    memoryFlat: {
      goal: `RSS after ${fmt(mem.total)} orchestrations within ${GOALS.rssGrowthPct} % of RSS after ${fmt(mem.first)}`,
      measured: growthPct,
      // Short of the total (time budget, or a stuck hub), growth already over the limit fails; within it, undecided.
      met:
        growthPct === null ? false : growthPct > GOALS.rssGrowthPct ? false : mem.reachedTotal ? true : null,
      ...(mem.reachedTotal
        ? {}
        : {
            note: `reached ${fmt(mem.reached)} of ${fmt(mem.total)} within the ${mem.budgetSeconds} s budget${mem.notEnded ? ` (${mem.notEnded} did not end)` : ""}`,
          }),
    },
  };
}

/**
 * What went wrong functionally (not a speed): orchestrations that did not complete or returned a wrong output, a
 * tally that disagreed with the meter. The bench exits 1 when there is any, so a CI smoke run (--quick) catches a
 * broken hub without judging this machine's speed.
 */
export function functionalProblems(r: Results): string[] {
  const out: string[] = [];
  const check = (what: string, n: number) => {
    if (n > 0) out.push(`${what}: ${n}`);
  };
  check("scenario 1: not completed", r.sequence.notCompleted);
  check("scenario 1: wrong outputs", r.sequence.wrongOutputs);
  check("scenario 2: not completed correctly", r.burst.orchestrations - r.burst.completedCorrectly);
  check("scenario 3: fan-out not completed correctly", r.fanOut.correctOutput ? 0 : 1);
  check("scenario 4: not completed", r.slowNeighbour.notCompleted);
  check("scenario 4: wrong outputs", r.slowNeighbour.wrongOutputs);
  check("scenario 6: not ended", r.memory.notEnded);
  check("scenario 6: not Completed", r.memory.notCompleted);
  check("peer: wrong outputs", r.peer.wrongOutputs);
  if (!("exact" in r.sequence.tallyCheck) || !r.sequence.tallyCheck.exact)
    out.push(`observer tally vs meter: ${JSON.stringify(r.sequence.tallyCheck)}`);
  return out;
}

/** hub ÷ peer (or peer ÷ hub for rates): what durability costs, per scenario. */
export function durabilityCost(r: Results) {
  return {
    sequenceP50: round1(r.sequence.latencyMs.p50 / r.peer.sequence.latencyMs.p50),
    burstRate:
      r.burst.completedPerSec > 0 ? round1(r.peer.burst.completedPerSec / r.burst.completedPerSec) : null,
    fanOut: r.fanOut.seconds === null ? null : round1(r.fanOut.seconds / r.peer.fanOut.seconds),
  };
}

const signed = (x: number) => (x >= 0 ? `+${x}` : `${x}`);

const kinds = (byKind: Record<string, { count: number; ru: number }>) =>
  Object.entries(byKind)
    .sort((a, b) => b[1].ru - a[1].ru)
    .map(([k, e]) => `${k} ${e.count} (${e.ru} RU)`)
    .join(", ");

/** Conclusions, each a restatement of numbers in the JSON. */
export function notesOf(
  r: Results,
  goals: Record<string, Goal>,
  load: { start: number; end: number; cores: number },
): string[] {
  const out: string[] = [];
  const s = r.sequence;
  const p = r.peer;
  const d = durabilityCost(r);
  const met = Object.values(goals).filter((g) => g.met === true).length;
  const undecided = Object.values(goals).filter((g) => g.met === null).length;
  out.push(
    `goals met: ${met} of ${Object.keys(goals).length}${undecided ? ` (${undecided} undecided)` : ""}: ` +
      Object.values(goals)
        .map(
          (g) =>
            `${g.goal} → ${g.measured ?? "n/a"} ${g.met === true ? "PASS" : g.met === false ? "FAIL" : "UNDECIDED"}`,
        )
        .join("; "),
  );
  out.push(
    `1. one at a time: p50 ${s.latencyMs.p50} ms, p95 ${s.latencyMs.p95} ms start → completed (${s.runs} runs; to the final commit's lastUpdatedTime p50 ${s.commitLatencyMs.p50} ms); ` +
      `in memory p50 ${p.sequence.latencyMs.p50} ms → durability costs ×${d.sequenceP50}. Observed with ${s.observation.statusReads} status reads and ${s.observation.waits} waitForChange calls ` +
      `(${s.observation.wokenEarly} returned on a change, ${s.observation.slicesRunOut} ran their ${config.observe.waitSliceMs} ms slice). ` +
      `The hub replays each orchestration ${s.cost.orchestratorInvocationsPerOrchestration} times (the in-memory peer: ${p.sequence.episodesPerOrchestration} episodes).`,
  );
  out.push(
    `5. cost per 3-activity orchestration (one at a time, the observer's requests taken out): ${s.cost.hubContainer.ru} RU and ${s.cost.hubContainer.requests} requests on the task hub container ` +
      `(${kinds(s.cost.hubContainer.byKind)}); lease container ${s.cost.leaseContainer.requests} requests, ${s.cost.leaseContainer.ru} RU. ` +
      `Idle, the hub makes ${s.idle.hubContainer.requestsPerSec} requests/s on its container and ${s.idle.leaseContainer.requestsPerSec}/s on the leases ` +
      `(${s.idle.backgroundPerOrchestration.hubRequests} and ${s.idle.backgroundPerOrchestration.leaseRequests} per orchestration at this pace). ` +
      `In the burst: ${r.burst.cost.hubContainer.ru} RU and ${r.burst.cost.hubContainer.requests} requests per orchestration, ${r.burst.cost.leaseContainer.requests} lease requests. ` +
      `The observer spent ${s.cost.observerOnHubContainer.requests} requests (${s.cost.observerOnHubContainer.ru} RU) per orchestration, not counted above` +
      ("exact" in s.tallyCheck
        ? `; its tally ${s.tallyCheck.exact ? "matched" : "did NOT match"} the meter in the check with the hub stopped (${s.tallyCheck.tallyRequests} vs ${s.tallyCheck.meterRequests} requests).`
        : `; the tally check failed: ${s.tallyCheck.error}.`),
  );
  out.push(
    `2. ${r.burst.orchestrations} at once through the HTTP API: the starts were answered at ${r.burst.starts.answeredPerSec}/s (last after ${r.burst.starts.lastAnsweredMs} ms; ${r.burst.starts.accepted} answered 202), ` +
      `${r.burst.ended} of ${r.burst.orchestrations} ended, ${r.burst.completedCorrectly} with the right output, the last after ${r.burst.lastEndedMs} ms: ${r.burst.completedPerSec} completed/s; ` +
      `in memory ${p.burst.completedPerSec}/s (×${d.burstRate ?? "n/a"}). Published (other hardware, 5-activity sequences): Netherite 34–87/s on one 1–2 core node, Azure Storage 15–24/s, MSSQL ~21/s, DTS ~127/s on one EP2.`,
  );
  out.push(
    r.fanOut.completed
      ? `3. fan-out of ${fmt(r.fanOut.activities)}: ${r.fanOut.seconds} s start → completed (${fmt(r.fanOut.cost.hubContainer.requests)} requests, ${fmt(r.fanOut.cost.hubContainer.ru)} RU, ${r.fanOut.cost.orchestratorInvocationsPerOrchestration} replays); in memory ${p.fanOut.seconds} s (${p.fanOut.episodes} episodes) → ×${d.fanOut}.`
      : `3. fan-out of ${fmt(r.fanOut.activities)}: NOT completed within ${r.fanOut.timeoutSeconds} s (last status ${r.fanOut.lastStatus}; ${r.fanOut.problemsLogged} warnings logged); in memory ${p.fanOut.seconds} s.`,
  );
  const sn = r.slowNeighbour;
  out.push(
    `4. ${sn.orchestrationsPerRound} orchestrations started ${sn.delayMs} ms after one with a ${sn.activityMs / 1000} s activity: p50 ${sn.besideSlowMs.p50} ms vs ${sn.aloneMs.p50} ms alone ` +
      `(${signed(sn.addedP50Ms)} ms, ×${sn.ratioP50}; ${sn.rounds} round${sn.rounds === 1 ? "" : "s"}); in memory ${signed(p.slowNeighbour.addedP50Ms)} ms.`,
  );
  const m = r.memory;
  out.push(
    `6. memory: RSS ${m.atFirst?.rssMb ?? "n/a"} MB after ${m.atFirst ? fmt(m.atFirst.orchestrations) : "n/a"} orchestrations, ${m.atEnd?.rssMb ?? "n/a"} MB after ${fmt(m.reached)} ` +
      `(×${m.rssRatio ?? "n/a"}; heap ${m.atFirst?.heapUsedMb ?? "n/a"} → ${m.atEnd?.heapUsedMb ?? "n/a"} MB, ×${m.heapRatio ?? "n/a"}) at ${m.orchestrationsPerSec} orchestrations/s` +
      (m.reachedTotal ? "." : `; the ${m.budgetSeconds} s budget ended the phase short of ${fmt(m.total)}.`) +
      (m.gcExposed ? "" : " global.gc was not exposed: readings include uncollected garbage."),
  );
  out.push(
    `1-minute load average ${load.start} at the start, ${load.end} at the end, on ${load.cores} cores` +
      (load.start > 1
        ? ": other processes shared the machine, so rates and latencies are pessimistic."
        : "."),
  );
  return out;
}

export const METHOD = {
  process:
    "The emulator runs in its own child process (bench/durable/emulator.child.ts: in memory, 127.0.0.1, throughput not enforced, containers without throughput as the dev host creates them). The task hub, its CosmosClient, the orchestrators and activities, the HTTP API and the in-memory peer run in the bench process (node --expose-gc --import tsx).",
  hub: "Each scenario gets a fresh CosmosTaskHub (public constructor, start, stop) on fresh containers (`/pk`; leases `/id` with TTL), with the dev host's settings (readDurableHubSettings: DURABLE_* from the environment, else the defaults, as runtime.ts passes them). Orchestrators are durable-functions generators run through the SDK's own Orchestrator (createOrchestrator from its testingUtils), their replies through JSON, as the worker's reach the host; activities are plain functions.",
  latency:
    "Start → completed: from just before startNew to the return of the status read that saw Completed. Each wait issues waitForChange (≤ 1 s) and a status read together, and awaits the wait only when the read shows the instance still running. commitLatency is to the instance's own lastUpdatedTime instead (the engine's clock at its final episode).",
  bursts:
    "Bursts (2, 6) learn that all are done by listing the instances (id prefix, terminal statuses) every 200 ms; each instance's end is its lastUpdatedTime, so the list's pace does not blur rates. completed/s = N ÷ (last lastUpdatedTime − the moment the burst began). The HTTP starts go through createDurableApiHandler on a node:http server in the bench process, all N on the wire at once (keep-alive, no socket cap); answered/s = N ÷ time of the last 202.",
  cost: "The emulator's own RU meter (per container and operation kind, every data-plane request) between two snapshots, minus the bench's observation requests, which run in an AsyncLocalStorage context a request plugin on the client tallies (count and x-ms-request-charge). The lease container is never touched by the observer. Idle rates: scenario 1's hub left alone for idleWindowMs after its warm-up runs.",
  peer: "packages/devhost/src/durable/testing.ts runOrchestration (the dev host's replay engine in memory, no storage, activities in process), the same generators and activities, one at a time / N at once (Promise.all) / the fan-out / the slow neighbour, in the same process after the hub scenarios.",
  memory:
    "A fresh hub; batches of 100 started at once with startNew, each awaited (list) before the next; never purged. A reading (after the first `first` orchestrations and every `first` after that): 500 ms of quiet, then the median of 3 samples 200 ms apart of process.memoryUsage(), each after two global.gc() calls. The phase stops at `total` or when `budgetSeconds` have passed.",
};

export { git };
