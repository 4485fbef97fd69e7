/** Durable bench: what every scenario records — a cost span over the emulator's meter, latency summaries. */
import type { Database } from "@azure/cosmos";
import { percentile, round1, round2 } from "../lib/stats.js";
import { type BenchHub, type Cost, costOf, type Emulator } from "./setup.js";
import type { ObserverTally } from "./tally.js";

/** What a scenario works with. */
export interface Bench {
  emu: Emulator;
  db: Database;
  tally: ObserverTally;
}

/** Requests and RU per orchestration (each kind and the totals divided by `per`). */
export interface PerOrchestration {
  requests: number;
  ru: number;
  byKind: Record<string, { count: number; ru: number }>;
}

export function perOrchestration(cost: Cost, per: number): PerOrchestration {
  const byKind: PerOrchestration["byKind"] = {};
  for (const [k, e] of Object.entries(cost.byKind))
    byKind[k] = { count: round2(e.count / per), ru: round2(e.ru / per) };
  return { requests: round2(cost.requests / per), ru: round2(cost.ru / per), byKind };
}

export interface SpanResult {
  seconds: number;
  /** The engine's requests on the hub's container: the meter minus the observer's tally. */
  hub: Cost;
  /** Everything on the lease container (the observer never touches it). */
  leases: Cost;
  /** The observer's own requests on the hub's container (status reads, waits, lists). */
  observer: Cost;
  orchestratorInvocations: number;
  activityInvocations: number;
  emulatorCpuMs: number;
  /** CPU time of the bench process (the hub, its client, the HTTP API, the observer) over the span. */
  hubProcessCpuMs: number;
  /** Of which in the kernel (system time: mostly the sockets' writes and reads). */
  hubProcessSystemCpuMs: number;
}

/** Starts counting: the returned function ends the span and gives what happened in it. */
export async function costSpan(b: Bench, h: BenchHub): Promise<() => Promise<SpanResult>> {
  const m0 = await b.emu.stats();
  const o0 = b.tally.snapshot();
  const inv0 = { ...h.counters };
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  return async () => {
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const m1 = await b.emu.stats();
    const o1 = b.tally.snapshot();
    return {
      seconds,
      hub: costOf(m0.meter, m1.meter, h.meterKeys.hub, { before: o0, after: o1 }),
      leases: costOf(m0.meter, m1.meter, h.meterKeys.leases),
      observer: costOf(o0, o1, h.meterKeys.hub),
      orchestratorInvocations: h.counters.orchestratorInvocations - inv0.orchestratorInvocations,
      activityInvocations: h.counters.activityInvocations - inv0.activityInvocations,
      emulatorCpuMs: m1.cpuMs - m0.cpuMs,
      hubProcessCpuMs: (cpu.user + cpu.system) / 1000,
      hubProcessSystemCpuMs: cpu.system / 1000,
    };
  };
}

/** The cost block of a scenario's JSON: per orchestration, on each container, and what the observer spent. */
export function costReport(span: SpanResult, orchestrations: number) {
  return {
    orchestrations,
    hubContainer: perOrchestration(span.hub, orchestrations),
    leaseContainer: perOrchestration(span.leases, orchestrations),
    observerOnHubContainer: perOrchestration(span.observer, orchestrations),
    orchestratorInvocationsPerOrchestration: round2(span.orchestratorInvocations / orchestrations),
    activityInvocationsPerOrchestration: round2(span.activityInvocations / orchestrations),
    emulatorCpuMsPerOrchestration: round2(span.emulatorCpuMs / orchestrations),
    /** The bench process's CPU (hub, client, HTTP API and the observer's reads) per orchestration. */
    hubProcessCpuMsPerOrchestration: round2(span.hubProcessCpuMs / orchestrations),
    hubProcessSystemCpuMsPerOrchestration: round2(span.hubProcessSystemCpuMs / orchestrations),
  };
}

export interface LatencySummary {
  n: number;
  p50: number;
  p95: number;
  max: number;
}

export function latency(values: readonly number[]): LatencySummary {
  return {
    n: values.length,
    p50: round1(percentile(values, 50)),
    p95: round1(percentile(values, 95)),
    max: round1(values.length ? Math.max(...values) : Number.NaN),
  };
}

/** A deadline (performance.now()) `config.observe.timeoutMs` from now. */
export const deadlineIn = (ms: number): number => performance.now() + ms;
