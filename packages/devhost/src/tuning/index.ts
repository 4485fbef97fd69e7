// `@cosmos-feed/devhost/tune`: what `cosmos-feed tune --measure` runs — a measured scenario on an embedded emulator
// with real processors — and the comparison of the model with the .NET processor's measurement, for the tuning
// benchmark (bench/tuning.bench.ts, bench/interop.bench.ts).
export { MeasureDefaults } from "./defaults.js";
export type { DotnetMeasured, InteropMeasurement } from "./interop.js";
export { compareWithMeasurement, readInteropMeasurement } from "./interop.js";
export { measureScenario } from "./measure.js";
export type { CheckedMeasureRequest, MeasureRequest, ScaledIntervals } from "./request.js";
export { checkMeasureRequest } from "./request.js";
export type {
  ComparedRow,
  MeasuredValue,
  MeasureResult,
  Phase,
  ProgressFn,
  UnaccountedRow,
} from "./types.js";
