import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type TuningInput, tune } from "@cosmos-feed/changefeed/tuning";

/**
 * The .NET column of `cosmos-feed tune` against a measurement: `npm run bench:interop` (docs/bench-interop.md) runs
 * the real .NET processor (Microsoft.Azure.Cosmos, built as the Functions trigger builds it) on the emulator and
 * counts its lease container requests in one scenario — 4 hosts × 32 leases, idle, Microsoft's default intervals.
 * For that scenario `tune` shows the measurement instead of the model; for any other it shows the model and how far
 * the model is from the measurement where there is one (the ±15 % check bench:interop and bench:tuning apply).
 */

/** The part of bench/results/interop.json this reads. */
export interface InteropMeasurement {
  /** When bench:interop measured it (ISO 8601). */
  date: string;
  /** The Microsoft.Azure.Cosmos version whose processor was measured. */
  dotnetSdk: string;
  /** .NET processor hosts in the measured scenario. */
  hosts: number;
  /** Leases in the measured scenario. */
  leases: number;
  /** Unscaled intervals of the measured scenario (ms): the scaled ones × scale. */
  intervalsMs: { renew: number; acquire: number; expiration: number; poll: number };
  /** Lease container requests per scenario hour, all of them (with the SDK's query plans). */
  requestsPerHour: number;
  /** The same without query plans (metadata): the document requests the model counts. */
  documentRequestsPerHour: number;
}

/** How the model compares with the measurement (deviation = (measured − model) / model). */
export interface DotnetMeasured extends InteropMeasurement {
  /** The model's .NET lease requests per hour in the measured scenario. */
  modelRequestsPerHour: number;
  /** (measured document requests − model) / model, in %. */
  deviationPct: number;
  /** The same with the SDK's query plan requests counted as measured. */
  deviationWithQueryPlansPct: number;
  /** Whether |deviationPct| is within MODEL_TOLERANCE_PCT. */
  withinTolerance: boolean;
  /** Whether the scenario asked for is the measured one (then the measurement replaces the model). */
  sameScenario: boolean;
}

/** The tolerance the model is judged by: tune --measure's goal (MeasureDefaults.goalPct), bench:tuning, bench:interop. */
export const MODEL_TOLERANCE_PCT = 15;

const here = dirname(fileURLToPath(import.meta.url));
/** Where the results are: the repository's bench/results, from packages/devhost/src/tuning (tsx) or dist/tuning (built). */
const CANDIDATES = [join(here, "..", "..", "..", "..", "bench", "results", "interop.json")];

/** Reads the stored bench:interop result; undefined when there is none (a deployment has no bench/). */
export function readInteropMeasurement(
  files: readonly string[] = CANDIDATES,
): InteropMeasurement | undefined {
  const file = files.find((f) => existsSync(f));
  if (!file) return undefined;
  try {
    const r = JSON.parse(readFileSync(file, "utf8"));
    const iv = r.scaledIntervalsMs;
    const dotnet = r.idle?.dotnet;
    if (!iv || !dotnet || typeof r.scale !== "number") return undefined;
    const [hosts, leases] = scenarioOf(String(r.method ?? ""));
    return {
      date: String(r.machine?.date ?? ""),
      dotnetSdk: String(r.machine?.microsoftAzureCosmos ?? ""),
      hosts,
      leases,
      intervalsMs: {
        renew: iv.leaseRenewInterval * r.scale,
        acquire: iv.leaseAcquireInterval * r.scale,
        expiration: iv.leaseExpirationInterval * r.scale,
        poll: iv.feedPollDelay * r.scale,
      },
      requestsPerHour: dotnet.requestsPerHour,
      documentRequestsPerHour: dotnet.documentRequestsPerHour,
    };
  } catch {
    return undefined;
  }
}

/** "Idle: 4 hosts over 32 leases" in the results' method text → [4, 32] (the bench's fixed scenario otherwise). */
function scenarioOf(method: string): [number, number] {
  const m = /Idle: (\d+) hosts over (\d+) leases/.exec(method);
  return m ? [Number(m[1]), Number(m[2])] : [4, 32];
}

/** The model against the measurement, for the scenario `input` asks about. */
export function compareWithMeasurement(input: TuningInput, m: InteropMeasurement): DotnetMeasured {
  const measured: TuningInput = {
    ...input,
    hosts: m.hosts,
    leases: m.leases,
    writesPerSecond: 0,
    leaseRenewIntervalMs: m.intervalsMs.renew,
    leaseAcquireIntervalMs: m.intervalsMs.acquire,
    leaseExpirationIntervalMs: m.intervalsMs.expiration,
    feedPollDelayMs: m.intervalsMs.poll,
  };
  const model = tune(measured).dotnet.leaseRequestsPerHour;
  const pct = (x: number) => Math.round(((x - model) / model) * 1000) / 10;
  const deviationPct = pct(m.documentRequestsPerHour);
  const deviationWithQueryPlansPct = pct(m.requestsPerHour);
  return {
    ...m,
    modelRequestsPerHour: model,
    deviationPct,
    deviationWithQueryPlansPct,
    withinTolerance:
      Math.abs(deviationPct) <= MODEL_TOLERANCE_PCT &&
      Math.abs(deviationWithQueryPlansPct) <= MODEL_TOLERANCE_PCT,
    sameScenario:
      input.hosts === m.hosts &&
      input.leases === m.leases &&
      input.writesPerSecond === 0 &&
      input.leaseRenewIntervalMs === m.intervalsMs.renew &&
      input.leaseAcquireIntervalMs === m.intervalsMs.acquire &&
      input.leaseExpirationIntervalMs === m.intervalsMs.expiration &&
      input.feedPollDelayMs === m.intervalsMs.poll,
  };
}

const n = (x: number) => x.toLocaleString("en-US");
const signed = (x: number) => `${x > 0 ? "+" : x < 0 ? "−" : "±"}${Math.abs(x)} %`;

/** The lines `tune` prints under the .NET column about the measurement. */
export function formatDotnetMeasured(d: DotnetMeasured): string[] {
  const where = `bench:interop, ${d.hosts} × ${d.leases} idle at Microsoft's defaults, Microsoft.Azure.Cosmos ${d.dotnetSdk}, ${d.date.slice(0, 10)}`;
  const check = `${signed(d.deviationPct)} without the SDK's query plans, ${signed(d.deviationWithQueryPlansPct)} with them: ${d.withinTolerance ? "within" : "OUTSIDE"} ±${MODEL_TOLERANCE_PCT} %`;
  if (d.sameScenario)
    return [
      `  measured (${where}): ${n(d.requestsPerHour)} lease requests/h, ${n(d.documentRequestsPerHour)} without the SDK's query plans — this replaces the model's ${n(d.modelRequestsPerHour)} (rows above: the model's breakdown)`,
      `  the model vs the measurement: ${check}`,
    ];
  return [
    `  model; checked against a measurement (${where}): measured ${n(d.documentRequestsPerHour)} requests/h vs the model's ${n(d.modelRequestsPerHour)}, ${check}`,
  ];
}
