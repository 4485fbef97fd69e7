// `@cosmos-feed/devhost/tune`: what `cosmos-feed tune --measure` runs — a measured scenario on an embedded emulator
// with real processors — and the comparison of the model with the .NET processor's measurement, for the tuning
// benchmark (bench/tuning.bench.ts, bench/interop.bench.ts).
export { compareWithMeasurement, readInteropMeasurement } from "./tune-interop.js";
export { checkMeasureRequest, MeasureDefaults, type MeasureResult, measureScenario } from "./tune-measure.js";
