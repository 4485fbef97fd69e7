// What a measurement reports: its phases, each model row next to its measured value, and the rest.
import type { AlgorithmCost, TuningInput } from "@cosmos-feed/changefeed/tuning";
import type { ScaledIntervals } from "./request.js";

/** The phases of a measurement, in order (docs/tuning.md). */
export type Phase = "seeding" | "balancing" | "settling" | "measuring";
/** Told of a phase's progress: `fraction` from 0 to 1, and a short `detail` (the balancing phase's leases owned). */
export type ProgressFn = (phase: Phase, fraction: number, detail?: string) => void;

/** One measured rate, per scenario hour (RU null: the meter cannot attribute it). */
export interface MeasuredValue {
  /** Requests per scenario hour. */
  requestsPerHour: number;
  /** RU per scenario hour; null when the meter cannot attribute it. */
  ruPerHour: number | null;
}

/** One row of the lease cost model next to its measurement. */
export interface ComparedRow {
  /** Which container the requests go to. */
  container: "lease" | "monitored";
  /** The model row's name (what the requests do). */
  what: string;
  /** The model's rates, per scenario hour. */
  model: { requestsPerHour: number; ruPerHour: number };
  /** The measured rates, per scenario hour. */
  measured: MeasuredValue;
  /** (measured − model) / model, in %; null when the model says 0. */
  deviationPct: { requests: number | null; ru: number | null };
  /** Requests the model expects within the window: rows below MeasureDefaults.meaningfulCount are not judged. */
  modelCountInWindow: number;
  /** Whether modelCountInWindow reaches MeasureDefaults.meaningfulCount (only then is the row judged). */
  meaningful: boolean;
  /** Whether requests and RU are within MeasureDefaults.goalPct of the model (true for a row not meaningful). */
  withinGoal: boolean;
}

/** Requests in the window that no model row accounts for, by the meter's operation kind. */
export interface UnaccountedRow {
  /** Which container the requests went to. */
  container: "lease" | "monitored";
  /** The RU meter's operation kind (e.g. "query", "read"). */
  kind: string;
  /** A short description of the requests. */
  what: string;
  /** How many were seen in the measuring window. */
  countInWindow: number;
  /** The same per scenario hour. */
  requestsPerHour: number;
  /** Their RU per scenario hour. */
  ruPerHour: number;
}

/** The result of `measureScenario` (what `cosmos-feed tune --measure --json` prints). */
export interface MeasureResult {
  scenario: Required<TuningInput>;
  scale: number;
  scaledIntervals: ScaledIntervals;
  window: { wallMs: number; scenarioMs: number };
  phasesMs: Record<Phase, number>;
  model: { ours: AlgorithmCost; oursWithoutWatch: AlgorithmCost; dotnet: AlgorithmCost };
  rows: ComparedRow[];
  /** Lease-container requests in the window the model has no row for (and the monitored container's besides feed reads and the writer). */
  unaccounted: UnaccountedRow[];
  bootstrap: {
    model: number;
    measured: number;
    deviationPct: number;
    /**
     * By operation kind (meter), plus acquires, pins (first checkpoints) and feedPins (first lease-feed reads: the
     * hosts whose own counters show a lease-feed read when balanced).
     */
    byKind: Partial<Record<string, number>>;
    balanceMs: number;
  };
  writer: { intendedPerSecond: number; writtenInWindow: number; perScenarioSecond: number; failed: number };
  hosts: { name: string; owned: number; leaseRequests: Record<string, number> }[];
  /** The processors' own lease-container counters vs the emulator's meter, in the window (a consistency check). */
  leaseRequestsInWindow: { meter: number; processorCounters: number };
  goal: { pct: number; judged: number; within: number; allWithin: boolean };
}
