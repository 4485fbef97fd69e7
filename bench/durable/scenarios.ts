/**
 * Durable bench scenarios 1–5 on the Cosmos DB task hub (each on a fresh hub: openHub). Scenario 5 (RU and
 * requests per orchestration) is measured inside scenario 1's sequential runs and again over scenario 2's burst.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { median, round1, round2 } from "../lib/stats.js";
import { serveClientApi } from "./http-api.js";
import { type Bench, costReport, costSpan, deadlineIn, latency } from "./measure.js";
import { awaitAll, awaitInstance, endedAfterMs, type Observation, sumObservations } from "./observe.js";
import { type BenchHub, config, openHub } from "./setup.js";
import { asObserver } from "./tally.js";
import { expectedOutput } from "./workload.js";

const SEQ_INPUT = 1;

/** Starts one orchestration and waits for it; latency from just before startNew to the read that saw the end. */
async function runOne(
  h: BenchHub,
  name: "seq3" | "fanOut" | "slow",
  instanceId: string,
  input: number,
): Promise<{
  ms: number | undefined;
  commitMs: number | undefined;
  startCallMs: number;
  ok: boolean;
  o: Observation;
}> {
  const t0 = performance.now();
  const epoch = Date.now();
  await h.hub.startNew(name, { instanceId, input: JSON.stringify(input) });
  const startCallMs = performance.now() - t0;
  const o = await awaitInstance(h.hub, instanceId, deadlineIn(config.observe.timeoutMs));
  const ok = o.status?.runtimeStatus === "Completed" && o.status.output === expectedOutput[name](input);
  return {
    ms: o.doneAt === undefined ? undefined : o.doneAt - t0,
    commitMs: o.status && o.doneAt !== undefined ? endedAfterMs(o.status, epoch) : undefined,
    startCallMs,
    ok,
    o,
  };
}

const defined = (xs: (number | undefined)[]) => xs.filter((x): x is number => x !== undefined);

/** 1 (and 5): 3-activity orchestrations one at a time; latency, and the cost per orchestration. */
export async function sequenceScenario(b: Bench) {
  const h = await openHub(b.db, "seq");
  let stopped = false;
  try {
    for (let i = 0; i < config.sequence.warmup; i++) await runOne(h, "seq3", `warm-${i}`, SEQ_INPUT);
    // The hub's background requests (change feed polls, lease renewals) while nothing runs, once started and warm.
    const idleEnd = await costSpan(b, h);
    await sleep(config.idleWindowMs);
    const idle = await idleEnd();
    const end = await costSpan(b, h);
    const runs = [];
    for (let i = 0; i < config.sequence.runs; i++) runs.push(await runOne(h, "seq3", `seq-${i}`, SEQ_INPUT));
    const span = await end();
    stopped = true;
    await h.hub.stop();
    const check = await tallyCheck(b, h);
    const n = runs.length;
    const perSec = (requests: number, ru: number) => ({
      requestsPerSec: round2(requests / idle.seconds),
      ruPerSec: round2(ru / idle.seconds),
    });
    return {
      runs: n,
      warmup: config.sequence.warmup,
      latencyMs: latency(defined(runs.map((r) => r.ms))),
      /** From just before startNew to the final commit's lastUpdatedTime: without the observer's last read. */
      commitLatencyMs: latency(defined(runs.map((r) => r.commitMs))),
      startCallMs: latency(runs.map((r) => r.startCallMs)),
      notCompleted: runs.filter((r) => r.ms === undefined).length,
      wrongOutputs: runs.filter((r) => r.ms !== undefined && !r.ok).length,
      observation: sumObservations(runs.map((r) => r.o)),
      cost: costReport(span, n),
      idle: {
        seconds: round2(idle.seconds),
        hubContainer: perSec(idle.hub.requests, idle.hub.ru),
        leaseContainer: perSec(idle.leases.requests, idle.leases.ru),
        /** The idle rate over this scenario's run time, per orchestration: the background share of the cost. */
        backgroundPerOrchestration: {
          hubRequests: round2(((idle.hub.requests / idle.seconds) * span.seconds) / n),
          leaseRequests: round2(((idle.leases.requests / idle.seconds) * span.seconds) / n),
        },
      },
      problemsLogged: h.counters.problems,
      firstProblems: h.counters.firstProblems,
      tallyCheck: check,
    };
  } finally {
    if (!stopped) await h.hub.stop();
  }
}

const TALLY_CHECK_READS = 20;
/** Lets a wait the last observation abandoned finish its last read before the check counts. */
const TALLY_CHECK_SETTLE_MS = 300;

/**
 * The observer tally against the emulator's meter with nothing else on the container (the hub is stopped): status
 * reads and one list as the observer. `exact` says the two agree request for request and RU for RU, which is what
 * lets the engine's cost be the meter minus the tally.
 */
async function tallyCheck(b: Bench, h: BenchHub) {
  try {
    await sleep(TALLY_CHECK_SETTLE_MS);
    const end = await costSpan(b, h);
    await asObserver(async () => {
      for (let i = 0; i < TALLY_CHECK_READS; i++) await h.hub.getStatus("seq-0");
      await h.hub.list({ instanceIdPrefix: "seq-", top: 10 });
    });
    const span = await end();
    // The span's `hub` is the meter minus the tally: zero when they agree.
    return {
      meterRequests: span.hub.requests + span.observer.requests,
      tallyRequests: span.observer.requests,
      exact: span.hub.requests === 0 && Math.abs(span.hub.ru) < 0.01,
    };
  } catch (e) {
    return { error: String(e) };
  }
}

/** 2: N orchestrations started at once through the HTTP API; starts answered/s and completed/s. */
export async function burstScenario(b: Bench) {
  const h = await openHub(b.db, "burst");
  const api = await serveClientApi(h.hub);
  try {
    for (let i = 0; i < config.sequence.warmup; i++) {
      await api.start("seq3", `warm-${i}`, SEQ_INPUT);
      await awaitInstance(h.hub, `warm-${i}`, deadlineIn(config.observe.timeoutMs));
    }
    const n = config.burst.orchestrations;
    const end = await costSpan(b, h);
    const epoch = Date.now();
    const t0 = performance.now();
    const answers = await Promise.all(
      Array.from({ length: n }, (_v, i) => api.start("seq3", `burst-${i}`, SEQ_INPUT)),
    );
    const lastAnswerMs = Math.max(...answers.map((a) => a.answeredAt)) - t0;
    const seen = await awaitAll(h.hub, "burst-", n, t0 + config.observe.timeoutMs);
    const span = await end();
    const completed = seen.ended.filter(
      (s) => s.runtimeStatus === "Completed" && s.output === expectedOutput.seq3(SEQ_INPUT),
    );
    const endedMs = seen.ended.map((s) => endedAfterMs(s, epoch));
    const lastEndedMs = endedMs.length ? Math.max(...endedMs) : Number.NaN;
    return {
      orchestrations: n,
      starts: {
        accepted: answers.filter((a) => a.status === 202).length,
        statuses: countBy(answers.map((a) => String(a.status))),
        lastAnsweredMs: round1(lastAnswerMs),
        answeredPerSec: round1(n / (lastAnswerMs / 1000)),
        answerMs: latency(answers.map((a) => a.answeredAt - t0)),
      },
      ended: seen.ended.length,
      completedCorrectly: completed.length,
      lastEndedMs: round1(lastEndedMs),
      /** All N ended within the timeout: N / time of the last end; else 0 (see `ended`). */
      completedPerSec: seen.ended.length === n ? round1(n / (lastEndedMs / 1000)) : 0,
      endedMs: latency(endedMs),
      observation: { listRounds: seen.listRounds, listPollMs: config.observe.listPollMs },
      cost: costReport(span, n),
      problemsLogged: h.counters.problems,
      firstProblems: h.counters.firstProblems,
    };
  } finally {
    await api.close();
    await h.hub.stop();
  }
}

/** 3: one orchestration fanning out to N activities; start → completed. */
export async function fanOutScenario(b: Bench) {
  const h = await openHub(b.db, "fanout");
  try {
    await runOne(h, "fanOut", "warm-fan", 10);
    const n = config.fanOut.activities;
    const end = await costSpan(b, h);
    const r = await runOne(h, "fanOut", "fan-1", n);
    const span = await end();
    return {
      activities: n,
      completed: r.ms !== undefined,
      correctOutput: r.ok,
      lastStatus: r.o.status?.runtimeStatus ?? "unknown",
      seconds: r.ms === undefined ? null : round2(r.ms / 1000),
      commitSeconds: r.commitMs === undefined ? null : round2(r.commitMs / 1000),
      timeoutSeconds: config.observe.timeoutMs / 1000,
      observation: sumObservations([r.o]),
      cost: costReport(span, 1),
      problemsLogged: h.counters.problems,
      firstProblems: h.counters.firstProblems,
    };
  } finally {
    await h.hub.stop();
  }
}

/** 4: K three-activity orchestrations alone, and started `delayMs` after one whose activity takes `activityMs`. */
export async function slowNeighbourScenario(b: Bench) {
  const h = await openHub(b.db, "slow");
  const { activityMs, delayMs, orchestrations: k, rounds } = config.slowNeighbour;
  const alone: number[] = [];
  const beside: number[] = [];
  const slowMs: number[] = [];
  let wrong = 0;
  let notCompleted = 0;
  const group = async (prefix: string, into: number[]) => {
    const runs = await Promise.all(
      Array.from({ length: k }, (_v, i) => runOne(h, "seq3", `${prefix}-${i}`, SEQ_INPUT)),
    );
    for (const r of runs) {
      if (r.ms === undefined) notCompleted++;
      else {
        into.push(r.ms);
        if (!r.ok) wrong++;
      }
    }
  };
  try {
    await runOne(h, "seq3", "warm", SEQ_INPUT);
    for (let round = 0; round < rounds; round++) {
      await group(`alone-${round}`, alone);
      const slow = runOne(h, "slow", `slow-${round}`, activityMs);
      await sleep(delayMs);
      await group(`beside-${round}`, beside);
      const s = await slow;
      if (s.ms !== undefined) slowMs.push(s.ms);
    }
    const p50Alone = median(alone);
    const p50Beside = median(beside);
    return {
      activityMs,
      delayMs,
      orchestrationsPerRound: k,
      rounds,
      aloneMs: latency(alone),
      besideSlowMs: latency(beside),
      addedP50Ms: round1(p50Beside - p50Alone),
      ratioP50: round2(p50Beside / p50Alone),
      slowOrchestrationMs: latency(slowMs),
      notCompleted,
      wrongOutputs: wrong,
      problemsLogged: h.counters.problems,
      firstProblems: h.counters.firstProblems,
    };
  } finally {
    await h.hub.stop();
  }
}

function countBy(keys: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}
