/**
 * `npm run bench:app -- --cost`: what one flow (PUT → operation Succeeded, and the summary it moves) costs in
 * Cosmos DB requests and RU, by container and by reason (the emulator meter's operation kind per container), for 1
 * and for 200 flows at once, against the goal of issue 35 (≤ 100 RU per flow). The dev host child runs the app with
 * its default settings on an emulator child in memory (nothing throttled, so nothing is retried). The app's
 * background work (feed polls, lease renewals, the task hub's polls) is measured over a window of the same length
 * with no flows just before, and subtracted. Writes bench/results/app-cost.json.
 */
import os from "node:os";
import { containerDefinition } from "../../src/shared/containers.js";
import { SETTINGS } from "../../src/shared/settings.js";
import { envNumber, machineFacts, round1, round2 } from "../lib/stats.js";
import type { BaselineApp } from "./cost-baseline.js";
import { waitUntilQuiet } from "./cpu.js";
import { git } from "./report.js";
import {
  call,
  config,
  type EmulatorStats,
  type HostStack,
  RESOURCE_BODY,
  ROOT,
  startStack,
} from "./setup.js";

/** The goal: RU per flow, all containers, at 200 flows at once. */
export const COST_GOAL_RU_PER_FLOW = 100;

/**
 * This checkout's SUMMARY_RECOUNT_WINDOW_MS: the app's default, unless BENCH_SUMMARY_RECOUNT_WINDOW_MS names another
 * (set on this checkout's stack only; a baseline's app may not know the setting).
 */
const recountWindowMs = envNumber("BENCH_SUMMARY_RECOUNT_WINDOW_MS", SETTINGS.summaryRecountWindowMs.default);

export const costConfig = {
  sizes: config.quick ? [1, 20] : [1, 200],
  recountWindowMs,
  /**
   * Each measurement window (ms) from the first PUT: long enough for every flow to end (a 200-flow storm's last one
   * took 24 s at load 10) and for the summaries trigger to read and recount after the last change — up to a poll
   * (SUMMARY_POLL_DELAY_MS, 5 s) and a recount window later; twice the window, for margin. Each run reports how many
   * summaries were final at the window's end (`summariesFinal`): the goal counts only a run where all were. The idle
   * window before it has the same length.
   */
  windowMs: {
    1: 10_000 + 2 * recountWindowMs,
    20: 20_000 + 2 * recountWindowMs,
    200: 40_000 + 2 * recountWindowMs,
  } as Record<number, number>,
};

type Meter = EmulatorStats["meter"];

/** Per container and kind: requests and RU of `after` − `before` − `idle` (idle already a delta), for `n` flows. */
function perFlow(before: Meter, after: Meter, idle: Meter, n: number) {
  const out: Record<string, Record<string, { requests: number; ru: number }>> = {};
  for (const [container, kinds] of Object.entries(after)) {
    const name = container.replace(/^cosmos-feed-app\//, "");
    for (const [kind, e] of Object.entries(kinds)) {
      const b = before[container]?.[kind];
      const i = idle[container]?.[kind];
      const requests = e.count - (b?.count ?? 0) - (i?.count ?? 0);
      const ru = e.ru - (b?.ru ?? 0) - (i?.ru ?? 0);
      if (Math.abs(requests) < 0.5 && Math.abs(ru) < 0.05) continue;
      out[name] ??= {};
      (out[name] as Record<string, { requests: number; ru: number }>)[kind] = {
        requests: round2(requests / n),
        ru: round2(ru / n),
      };
    }
  }
  return out;
}

function deltaOf(before: Meter, after: Meter): Meter {
  const out: Meter = {};
  for (const [container, kinds] of Object.entries(after)) {
    out[container] = {};
    for (const [kind, e] of Object.entries(kinds)) {
      const b = before[container]?.[kind];
      (out[container] as Meter[string])[kind] = {
        count: e.count - (b?.count ?? 0),
        ru: e.ru - (b?.ru ?? 0),
        throttled: e.throttled - (b?.throttled ?? 0),
      };
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One measurement: an idle window, then `n` PUTs at once and a window of the same length; the per-flow figures. */
async function measure(stack: HostStack, n: number, tag: string) {
  const windowMs = costConfig.windowMs[n] ?? 25_000;
  await waitUntilQuiet([stack]);
  const idleStart = (await stack.emulator.stats()).meter;
  await sleep(windowMs);
  const idle = deltaOf(idleStart, (await stack.emulator.stats()).meter);
  const before = await stack.emulator.stats();
  const t0 = Date.now();
  const urls = await Promise.all(
    Array.from({ length: n }, async (_v, i) => {
      const res = await call("PUT", `${stack.url}/api/subscriptions/${tag}-${i}/resources/r`, RESOURCE_BODY);
      const url = res.headers["azure-asyncoperation"];
      if (res.status !== 201 || typeof url !== "string") throw new Error(`PUT: ${res.status} ${res.text}`);
      return url;
    }),
  );
  await sleep(Math.max(0, t0 + windowMs - Date.now()));
  const after = await stack.emulator.stats();
  // Read after the meter: the bench's own reads are not in the figures.
  let succeeded = 0;
  const flowMs: number[] = [];
  for (const url of urls) {
    const res = await call("GET", url);
    const op = JSON.parse(res.text) as { status?: string; startTime?: string; endTime?: string };
    if (op.status === "Succeeded") succeeded++;
    if (op.startTime && op.endTime) flowMs.push(Date.parse(op.endTime) - Date.parse(op.startTime));
  }
  // Whether the window held every flow's summary work: each subscription's summary counts its one resource
  // Succeeded (a recount missing from the window would make the figures look cheaper than they are).
  let summariesFinal = 0;
  for (let i = 0; i < n; i++) {
    const res = await call("GET", `${stack.url}/api/subscriptions/${tag}-${i}/summary`);
    const summary = (res.status === 200 ? JSON.parse(res.text) : {}) as { counts?: Record<string, number> };
    if (JSON.stringify(summary.counts) === JSON.stringify({ Succeeded: 1 })) summariesFinal++;
  }
  flowMs.sort((a, b) => a - b);
  const flowDurationMs = {
    p50: flowMs[Math.floor(flowMs.length / 2)] ?? null,
    max: flowMs[flowMs.length - 1] ?? null,
  };
  const byContainerAndKind = perFlow(before.meter, after.meter, idle, n);
  const byContainer: Record<string, { requests: number; ru: number }> = {};
  let requests = 0;
  let ru = 0;
  for (const [c, kinds] of Object.entries(byContainerAndKind)) {
    const sum = Object.values(kinds).reduce(
      (a, e) => ({ requests: a.requests + e.requests, ru: a.ru + e.ru }),
      {
        requests: 0,
        ru: 0,
      },
    );
    byContainer[c] = { requests: round1(sum.requests), ru: round1(sum.ru) };
    requests += sum.requests;
    ru += sum.ru;
  }
  // The HTTP requests the emulator received, by route shape (the flows' and the idle background's, not subtracted).
  const shapes: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.requests)) {
    const d = v - (before.requests[k] ?? 0);
    if (d > 0) shapes[k] = d;
  }
  return {
    flows: n,
    succeeded,
    summariesFinal,
    /** PUT to Succeeded, by the operation's own times (startTime → endTime). */
    flowDurationMs,
    windowMs,
    ruPerFlow: round1(ru),
    requestsPerFlow: round1(requests),
    byContainer,
    byContainerAndKind,
    requestsByRouteShapeInWindow: shapes,
  };
}

type Run = Awaited<ReturnType<typeof measure>>;

/** Without the dev host's task hub container (see costPhase): the RU per flow a deployment pays in Cosmos DB. */
function withoutTaskHub(r: Run | undefined): number | null {
  const taskHub = containerDefinition.containers.find((c) => c.role === "durable")?.name ?? "durable-tasks";
  return r
    ? round1(Object.entries(r.byContainer).reduce((a, [c, e]) => (c === taskHub ? a : a + e.ru), 0))
    : null;
}

/** A run counts only if every flow succeeded and every summary was final within its window. */
const complete = (r: Run) => r.succeeded === r.flows && r.summariesFinal === r.flows;

function logRun(label: string, r: Run): void {
  console.log(
    `   ${label}${r.flows} flow(s): ${r.ruPerFlow} RU and ${r.requestsPerFlow} requests per flow (${r.succeeded}/${r.flows} Succeeded, ` +
      `${r.summariesFinal}/${r.flows} summaries final; flow p50 ${r.flowDurationMs.p50} ms, max ${r.flowDurationMs.max} ms): ` +
      Object.entries(r.byContainer)
        .map(([c, e]) => `${c} ${e.ru} RU/${e.requests} req`)
        .join(", "),
  );
}

/** This checkout's figures against the baseline's of the same size and run: per container, and the ratios. */
function versus(current: Run, baseline: Run) {
  const containers = [
    ...new Set([...Object.keys(baseline.byContainer), ...Object.keys(current.byContainer)]),
  ];
  const byContainer: Record<string, { baseline: number; current: number; cut: number }> = {};
  for (const c of containers) {
    const b = baseline.byContainer[c]?.ru ?? 0;
    const a = current.byContainer[c]?.ru ?? 0;
    byContainer[c] = { baseline: b, current: a, cut: round1(b - a) };
  }
  const bw = withoutTaskHub(baseline) ?? 0;
  const cw = withoutTaskHub(current) ?? 0;
  return {
    flows: current.flows,
    ruPerFlow: {
      baseline: baseline.ruPerFlow,
      current: current.ruPerFlow,
      ratio: round2(current.ruPerFlow / baseline.ruPerFlow),
    },
    withoutTaskHub: { baseline: bw, current: cw, ratio: round2(cw / bw) },
    byContainer,
  };
}

/**
 * The cost phase: one stack (two with a baseline: both up for the whole run, each size measured on one then the
 * other, the order alternating by size), each size measured after an idle window of its own.
 */
export async function costPhase(scratch: string, baseline?: BaselineApp) {
  const machine = {
    ...machineFacts(ROOT),
    loadAverage1mAtStart: round2(os.loadavg()[0] ?? 0),
    sharedMachine: true,
  };
  const stack = await startStack(
    "cost",
    scratch,
    process.env.BENCH_SUMMARY_RECOUNT_WINDOW_MS ? { SUMMARY_RECOUNT_WINDOW_MS: String(recountWindowMs) } : {},
  );
  const base = baseline
    ? await startStack("cost-baseline", scratch, {}, { root: baseline.root, containers: baseline.containers })
    : undefined;
  try {
    const runs: Run[] = [];
    const baselineRuns: Run[] = [];
    for (const [i, n] of costConfig.sizes.entries()) {
      const one = async (which: "current" | "baseline") => {
        if (which === "current" || !base) {
          const r = await measure(stack, n, `cost${n}`);
          logRun(base ? "this checkout, " : "", r);
          runs.push(r);
        } else {
          const r = await measure(base, n, `cost${n}`);
          logRun(`baseline ${baseline?.commit}, `, r);
          baselineRuns.push(r);
        }
      };
      const order: ("current" | "baseline")[] =
        i % 2 === 0 ? ["baseline", "current"] : ["current", "baseline"];
      for (const which of base ? order : (["current"] as const)) await one(which);
    }
    const at = runs[runs.length - 1];
    // Without the dev host's task hub container (role durable, devHostOnly: not deployed; in Azure Durable Functions
    // keeps its state in Azure Storage or the Durable Task Scheduler): what a deployment pays in Cosmos DB.
    const atWithout = withoutTaskHub(at);
    const comparison = baseline ? runs.map((r, k) => versus(r, baselineRuns[k] as Run)) : undefined;
    const last = comparison?.[comparison.length - 1];
    return {
      machine: { ...machine, loadAverage1mAtEnd: round2(os.loadavg()[0] ?? 0) },
      config: {
        ...costConfig,
        gitHead: git("rev-parse --short HEAD"),
        gitDirty: git("status --porcelain -- src functions packages") !== "",
        method:
          `The app on a dev host child (default settings; SUMMARY_RECOUNT_WINDOW_MS ${recountWindowMs}) over an ` +
          "unthrottled in-memory emulator child; per size: " +
          "the emulator meter over an idle window, then N PUTs at once (each on its own subscription) and a window of " +
          "the same length from the first PUT; per flow = (window − idle window) ÷ N, by container and operation kind." +
          (baseline
            ? ` Baseline: the app at ${baseline.commit} (its functions/, src/ and containers.json; this checkout's ` +
              "node_modules, dev host and packages) on a stack of its own, up for the same run; each size measured " +
              "on both, the order alternating by size."
            : ""),
      },
      goal: {
        what: `≤ ${COST_GOAL_RU_PER_FLOW} RU per flow (all containers, ${at?.flows} flows at once)`,
        ruPerFlow: at?.ruPerFlow ?? null,
        met: at ? at.ruPerFlow <= COST_GOAL_RU_PER_FLOW && complete(at) : null,
        ruPerFlowWithoutTaskHub: atWithout,
        metWithoutTaskHub:
          at && atWithout !== null ? atWithout <= COST_GOAL_RU_PER_FLOW && complete(at) : null,
      },
      ...(baseline && comparison && last
        ? {
            baseline: { commit: baseline.commit, runs: baselineRuns },
            versusBaseline: comparison,
            conclusions: [
              `At ${last.flows} flows at once, ${last.ruPerFlow.current} RU per flow against the baseline's ` +
                `${last.ruPerFlow.baseline} in the same run (×${last.ruPerFlow.ratio}); without the task hub ` +
                `${last.withoutTaskHub.current} against ${last.withoutTaskHub.baseline} (×${last.withoutTaskHub.ratio}).`,
              `Per container (baseline → this checkout): ${Object.entries(last.byContainer)
                .map(([c, e]) => `${c} ${e.baseline} → ${e.current}`)
                .join(", ")}.`,
            ],
          }
        : {}),
      runs,
    };
  } finally {
    await stack.stop();
    await base?.stop();
  }
}
