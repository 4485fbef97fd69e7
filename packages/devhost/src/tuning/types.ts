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
  /** The scenario measured, every field filled in (the request's, with the model's defaults). */
  scenario: Required<TuningInput>;
  /** How many times faster than real time the scenario ran. */
  scale: number;
  /** The scenario's intervals as the processors ran them (÷ `scale`, ms). */
  scaledIntervals: ScaledIntervals;
  /** The measuring window: wall-clock ms, and the scenario ms it stands for (× `scale`). */
  window: { wallMs: number; scenarioMs: number };
  /** Wall-clock ms each phase took. */
  phasesMs: Record<Phase, number>;
  /**
   * The cost model's answer for the scenario: this processor, this processor without its lease watch, and the
   * .NET processor.
   */
  model: { ours: AlgorithmCost; oursWithoutWatch: AlgorithmCost; dotnet: AlgorithmCost };
  /** Each row of the model next to its measurement, in the window. */
  rows: ComparedRow[];
  /** Lease-container requests in the window the model has no row for (and the monitored container's besides feed reads and the writer). */
  unaccounted: UnaccountedRow[];
  /**
   * The one-time lease-container requests from the start until the leases balanced: the model's count, the
   * measured count, their deviation (%), the measured ones by kind, and how long balancing took (wall-clock ms).
   */
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
  /**
   * The document writer: the writes per scenario second asked for, the writes made in the window, the same per
   * scenario second, and the writes that failed.
   */
  writer: { intendedPerSecond: number; writtenInWindow: number; perScenarioSecond: number; failed: number };
  /** Each host (processor): its name, the leases it owned at the end, its lease-container requests by kind. */
  hosts: { name: string; owned: number; leaseRequests: Record<string, number> }[];
  /** The processors' own lease-container counters vs the emulator's meter, in the window (a consistency check). */
  leaseRequestsInWindow: { meter: number; processorCounters: number };
  /**
   * The verdict: the goal (model within `pct` % of the measurement, MeasureDefaults.goalPct), how many rows were
   * judged (the meaningful ones), how many were within it, and whether all were.
   */
  goal: { pct: number; judged: number; within: number; allWithin: boolean };
}
