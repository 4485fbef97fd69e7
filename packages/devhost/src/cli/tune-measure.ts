// `cosmos-feed tune --measure`: its options → a checked request, a progress bar per phase, and the table. The
// measurement itself is a library (../tuning/: `@cosmos-feed/devhost/tune`).
import { MeasureDefaults } from "../tuning/defaults.js";
import { measureScenario } from "../tuning/measure.js";
import { type CheckedMeasureRequest, checkMeasureRequest } from "../tuning/request.js";
import type { MeasureResult, Phase, ProgressFn } from "../tuning/types.js";
import { CliInputError } from "./leases.js";
import { parseDuration, type TuneCliOptions, tuningInputFromOptions } from "./tune.js";

/** `--scale`: a plain positive number (1–1000). */
export function parseScale(raw: string): number {
  const t = raw.trim();
  if (!/^\d+(\.\d+)?$/.test(t)) throw new CliInputError(`--scale is a number from 1 to 1000; got '${raw}'.`);
  const n = Number(t);
  if (n < 1 || n > 1_000) throw new CliInputError(`--scale is a number from 1 to 1000; got '${raw}'.`);
  return n;
}

/** The options `tune --measure` reads (commander's names): the scenario's, and its own. */
export interface MeasureCliOptions extends TuneCliOptions {
  scale?: string;
  window?: string;
  json?: boolean;
}

/** The checked request for the options: `--scale` (default MeasureDefaults.scale), `--window` (default 60s). Throws CliInputError. */
export function measureRequestFromOptions(o: MeasureCliOptions): CheckedMeasureRequest {
  const scenario = tuningInputFromOptions(o);
  return checkMeasureRequest({
    scenario,
    scale: o.scale === undefined ? MeasureDefaults.scale : parseScale(o.scale),
    windowMs: o.window === undefined ? MeasureDefaults.windowMs : parseDuration(o.window, "--window"),
  });
}

/** A one-line text progress bar per phase on stderr (only when stderr is a terminal). */
function progressBar(stream: NodeJS.WriteStream = process.stderr): ProgressFn | undefined {
  if (!stream.isTTY) return undefined;
  let current: Phase | undefined;
  const width = 30;
  return (phase, fraction, detail) => {
    if (current !== undefined && current !== phase) stream.write("\n");
    current = phase;
    const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
    stream.write(
      `\r${phase.padEnd(10)} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${String(Math.round(fraction * 100)).padStart(3)}%${detail ? ` ${detail}` : ""}\x1b[K`,
    );
    if (phase === "measuring" && fraction >= 1) {
      stream.write("\n");
      current = undefined;
    }
  };
}

/** Width of the row labels in the text table. */
const LABEL = 50;
const fmt = (n: number | null) => (n === null ? "—" : Math.round(n).toLocaleString("en-US"));
const pct = (n: number | null) => (n === null ? "—" : `${n > 0 ? "+" : ""}${n.toFixed(1)} %`);

export function formatMeasure(r: MeasureResult): string {
  const s = r.scenario;
  const sc = r.scaledIntervals;
  const out = [
    `${s.hosts} host(s) × ${s.leases} lease(s), ${s.writesPerSecond} changes/s; renew ${s.leaseRenewIntervalMs} ms, acquire ${s.leaseAcquireIntervalMs} ms, expiration ${s.leaseExpirationIntervalMs} ms, poll ${s.feedPollDelayMs} ms, watch ${s.leaseWatchIntervalMs} ms, maxCheckpointDelay ${s.maxCheckpointDelayMs} ms`,
    `measured on the embedded emulator with ${s.hosts} real processor(s) and a writer, every interval ÷ ${r.scale} (renew ${sc.leaseRenewInterval} ms, acquire ${sc.leaseAcquireInterval} ms, expiration ${sc.leaseExpirationInterval} ms, poll ${sc.feedPollDelay} ms, watch ${sc.leaseWatchInterval} ms), window ${(r.window.wallMs / 1000).toFixed(1)} s wall = ${(r.window.scenarioMs / 1000).toFixed(0)} s of scenario; per scenario hour:`,
    "",
    `  ${"this processor".padEnd(LABEL)}${"model req/h".padStart(12)}${"measured".padStart(12)}${"dev".padStart(10)}${"model RU/h".padStart(12)}${"measured".padStart(12)}${"dev".padStart(10)}`,
  ];
  for (const row of r.rows) {
    out.push(
      `  ${`${row.container}: ${row.what}`.slice(0, LABEL - 1).padEnd(LABEL)}${fmt(row.model.requestsPerHour).padStart(12)}${fmt(row.measured.requestsPerHour).padStart(12)}${pct(row.deviationPct.requests).padStart(10)}${fmt(row.model.ruPerHour).padStart(12)}${fmt(row.measured.ruPerHour).padStart(12)}${pct(row.deviationPct.ru).padStart(10)}${row.meaningful ? "" : "  (too few to judge)"}`,
    );
  }
  out.push(
    `  within ±${r.goal.pct} %: ${r.goal.within} of ${r.goal.judged} judged rows`,
    "",
    "  requests the model has no row for (in the window, per scenario hour):",
  );
  if (r.unaccounted.length === 0) out.push("    none");
  for (const u of r.unaccounted)
    out.push(
      `    ${u.container}: ${u.what} (${u.kind})`.padEnd(62) +
        `${String(u.countInWindow).padStart(6)} → ${fmt(u.requestsPerHour)}/h, ${fmt(u.ruPerHour)} RU/h`,
    );
  out.push(
    "",
    `  start-up (bootstrap until balanced, ${(r.bootstrap.balanceMs / 1000).toFixed(1)} s): model ${r.bootstrap.model} lease-container requests, measured ${r.bootstrap.measured} (${pct(r.bootstrap.deviationPct)}): ${Object.entries(
      r.bootstrap.byKind,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
    `  writer: ${r.writer.perScenarioSecond} changes per scenario second (asked ${r.writer.intendedPerSecond})${r.writer.failed ? `, ${r.writer.failed} failed` : ""}`,
    "",
    "  model for the same scenario (lease container requests/h, RU/s):",
    `    this processor                      ${fmt(r.model.ours.leaseRequestsPerHour).padStart(10)} ${r.model.ours.leaseRuPerSecond.toFixed(2).padStart(8)}`,
    `    this processor without the watch    ${fmt(r.model.oursWithoutWatch.leaseRequestsPerHour).padStart(10)} ${r.model.oursWithoutWatch.leaseRuPerSecond.toFixed(2).padStart(8)}`,
    `    .NET processor / Functions trigger  ${fmt(r.model.dotnet.leaseRequestsPerHour).padStart(10)} ${r.model.dotnet.leaseRuPerSecond.toFixed(2).padStart(8)}`,
  );
  return out.join("\n");
}

/** The `tune --measure` command: one line and exit 1 for bad input (thrown as CliInputError to the caller). */
export async function runTuneMeasure(o: MeasureCliOptions): Promise<void> {
  const req = measureRequestFromOptions(o);
  const result = await measureScenario(req, progressBar());
  console.log(o.json ? JSON.stringify(result, null, 2) : formatMeasure(result));
}
