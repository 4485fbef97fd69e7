import {
  type AlgorithmCost,
  type TuningInput,
  type TuningResult,
  tune,
} from "@cosmos-feed/changefeed/tuning";
import {
  compareWithMeasurement,
  type DotnetMeasured,
  type InteropMeasurement,
  readInteropMeasurement,
} from "./interop.js";

/** The model's answer plus this processor without its lease watch (each host lists leases per acquire interval). */
export interface TuneReport extends TuningResult {
  oursWithoutWatch: AlgorithmCost;
  /** The .NET processor measured by bench:interop, and the model's deviation from it (when results exist). */
  dotnetMeasured?: DotnetMeasured;
}

/**
 * `tune` for the three cases the CLI prints: ours with the watch, ours without it, and .NET / Functions trigger
 * (with the bench:interop measurement of .NET, read from bench/results/interop.json unless given; null: none).
 * Throws the model's InvalidTuningInputError for an input it refuses.
 */
export function tuneReport(
  input: TuningInput,
  interop: InteropMeasurement | null = readInteropMeasurement() ?? null,
): TuneReport {
  const result = tune(input);
  const oursWithoutWatch = tune({ ...result.input, leaseWatchIntervalMs: 0 }).ours;
  const dotnetMeasured = interop && compareWithMeasurement(result.input, interop);
  return { ...result, oursWithoutWatch, ...(dotnetMeasured ? { dotnetMeasured } : {}) };
}
