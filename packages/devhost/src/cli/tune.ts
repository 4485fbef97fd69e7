import { createRequire } from "node:module";
import type { TuningInput } from "@cosmos-feed/changefeed/tuning";
import { formatDotnetMeasured } from "../tuning/interop.js";
import { type TuneReport, tuneReport } from "../tuning/report.js";
import { CliInputError } from "./leases.js";

// The model's report moved to the tuning library (../tuning/report.ts); the CLI and its tests import it from here too.
export { type TuneReport, tuneReport };

/** Options that only one of `tune`'s two modes reads: the model's sweep and chart, or the measurement's knobs. */
const SWEEP_ONLY = ["sweep", "svg", "png"] as const;
const MEASURE_ONLY = ["scale", "window"] as const;

/**
 * Refuses options the chosen mode would ignore: `--sweep`/`--svg`/`--png` with `--measure` (it measures one
 * scenario, draws nothing), `--scale`/`--window` without it. `given(name)`: the option was on the command line.
 */
export function checkTuneModeOptions(measure: boolean, given: (name: string) => boolean): void {
  const flags = (names: readonly string[]) =>
    names
      .filter(given)
      .map((n) => `--${n}`)
      .join(", ");
  if (measure) {
    const extra = flags(SWEEP_ONLY);
    if (extra) throw new CliInputError(`--sweep, --svg and --png do not go with --measure; got ${extra}.`);
  } else {
    const extra = flags(MEASURE_ONLY);
    if (extra) throw new CliInputError(`--scale and --window go with --measure only; got ${extra}.`);
  }
}

/** The scenario options `tune` and `tune --measure` share, as the command line gives them. */
export interface TuneCliOptions {
  hosts: number;
  leases: number;
  writes: number;
  renew: string;
  acquire: string;
  expiration: string;
  poll: string;
  watch?: string;
  checkpointDelay?: string;
}

/** The scenario of `tune`'s options: --writes checked, the durations parsed (--watch and --checkpoint-delay when given). */
export function tuningInputFromOptions(o: TuneCliOptions): TuningInput {
  if (!Number.isFinite(o.writes) || o.writes < 0) throw new CliInputError("--writes is a number ≥ 0.");
  return {
    hosts: o.hosts,
    leases: o.leases,
    writesPerSecond: o.writes,
    leaseRenewIntervalMs: parseDuration(o.renew, "--renew"),
    leaseAcquireIntervalMs: parseDuration(o.acquire, "--acquire"),
    leaseExpirationIntervalMs: parseDuration(o.expiration, "--expiration"),
    feedPollDelayMs: parseDuration(o.poll, "--poll"),
    ...(o.watch !== undefined ? { leaseWatchIntervalMs: parseDuration(o.watch, "--watch") } : {}),
    ...(o.checkpointDelay !== undefined
      ? { maxCheckpointDelayMs: parseDuration(o.checkpointDelay, "--checkpoint-delay") }
      : {}),
  };
}

/** `17s`, `500ms`, `2m`, `1h` or plain milliseconds → ms. */
export function parseDuration(raw: string, name: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  if (!m) throw new CliInputError(`${name} is a duration such as 500ms, 17s, 2m or 1h; got '${raw}'.`);
  const n = Number(m[1]);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "ms") as "ms" | "s" | "m" | "h"];
  return Math.round(n * factor);
}

export const SWEEPABLE = {
  leaseExpirationInterval: "leaseExpirationIntervalMs",
  leaseRenewInterval: "leaseRenewIntervalMs",
  leaseAcquireInterval: "leaseAcquireIntervalMs",
  feedPollDelay: "feedPollDelayMs",
} as const;

export interface Sweep {
  name: keyof typeof SWEEPABLE;
  values: number[];
}

/** `leaseExpirationInterval=10s..120s` (12 steps, or `:n`) → the values swept. */
export function parseSweep(raw: string): Sweep {
  const m = /^(\w+)=([^.]+)\.\.([^:]+)(?::(\d+))?$/.exec(raw.trim());
  if (!m || !(m[1] in SWEEPABLE)) {
    throw new CliInputError(
      `--sweep is <interval>=<from>..<to>[:steps] with interval one of ${Object.keys(SWEEPABLE).join(", ")}; got '${raw}'.`,
    );
  }
  const from = parseDuration(m[2], "--sweep from");
  const to = parseDuration(m[3], "--sweep to");
  const steps = m[4] ? Number(m[4]) : 12;
  if (to <= from || steps < 2 || steps > 200)
    throw new CliInputError("--sweep needs from < to and 2–200 steps.");
  const values = Array.from({ length: steps }, (_v, k) => Math.round(from + ((to - from) * k) / (steps - 1)));
  return { name: m[1] as keyof typeof SWEEPABLE, values };
}

export interface SweepPoint {
  value: number;
  failoverMaxMs: number;
  oursLeaseRuPerSecond: number;
  oursWithoutWatchLeaseRuPerSecond: number;
  dotnetLeaseRuPerSecond: number;
  monitoredRuPerSecond: number;
  skipped?: string;
}

export function runSweep(base: TuningInput, sweep: Sweep): SweepPoint[] {
  return sweep.values.map((value) => {
    const input = { ...base, [SWEEPABLE[sweep.name]]: value };
    try {
      const r = tuneReport(input);
      return {
        value,
        failoverMaxMs: r.ours.failoverMs.max,
        oursLeaseRuPerSecond: r.ours.leaseRuPerSecond,
        oursWithoutWatchLeaseRuPerSecond: r.oursWithoutWatch.leaseRuPerSecond,
        dotnetLeaseRuPerSecond: r.dotnet.leaseRuPerSecond,
        monitoredRuPerSecond: r.ours.monitoredRuPerSecond,
      };
    } catch (e) {
      return {
        value,
        failoverMaxMs: Number.NaN,
        oursLeaseRuPerSecond: Number.NaN,
        oursWithoutWatchLeaseRuPerSecond: Number.NaN,
        dotnetLeaseRuPerSecond: Number.NaN,
        monitoredRuPerSecond: Number.NaN,
        skipped: (e as Error).message,
      };
    }
  });
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");

/** Round tick values (1, 2, 2.5, 5 × 10^k) covering [lo, hi] with about `n` steps. */
export function niceTicks(lo: number, hi: number, n: number): number[] {
  // A span too small for 12 significant digits (a flat line) is widened, so the steps stay distinct.
  const span = Math.max(hi - lo, Math.abs(hi) * 1e-6, 1e-6);
  const raw = span / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const first = Math.floor(lo / step) * step;
  const out: number[] = [];
  for (let k = 0; ; k++) {
    const v = Number((first + k * step).toPrecision(12));
    out.push(v);
    if ((v >= hi - step * 1e-9 && out.length >= 2) || out.length > 4 * n + 4) return out;
  }
}

/** A swept value as the CLI reads it back: 45s, 1.5s, 500ms, 2m. */
export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0 && ms >= 60_000) return `${ms / 60_000}m`;
  if (ms >= 1_000) return `${Number((ms / 1_000).toFixed(1))}s`;
  return `${ms}ms`;
}

const SERIES = [
  { key: "dotnetLeaseRuPerSecond", label: ".NET processor / Functions trigger", color: "#c0392b" },
  { key: "oursWithoutWatchLeaseRuPerSecond", label: "this processor, watch off", color: "#7d8c96" },
  { key: "oursLeaseRuPerSecond", label: "this processor", color: "#2471a3" },
] as const;

/**
 * Lease-container RU/s (y) against the worst-case failover time (x), one line per algorithm, each point labelled
 * with the swept value. An interval that does not move failover (renew, poll) is plotted against itself instead.
 */
export function sweepSvg(sweep: Sweep, points: SweepPoint[]): string {
  const ok = points.filter((p) => !p.skipped);
  const W = 720;
  const H = 440;
  const pad = { l: 64, r: 24, t: 72, b: 56 };
  const failoverMoves = new Set(ok.map((p) => p.failoverMaxMs)).size > 1;
  const xOf = (p: SweepPoint) => (failoverMoves ? p.failoverMaxMs : p.value) / 1000;
  const xs = ok.map(xOf);
  const xTicks = niceTicks(Math.min(...xs), Math.max(...xs), 6);
  const [x0, x1] = [xTicks[0], xTicks[xTicks.length - 1]];
  const yTicks = niceTicks(0, Math.max(...ok.flatMap((p) => SERIES.map((s) => p[s.key]))), 5);
  const y1 = yTicks[yTicks.length - 1];
  const sx = (x: number) => pad.l + ((x - x0) / (x1 - x0 || 1)) * (W - pad.l - pad.r);
  const sy = (y: number) => H - pad.b - (y / (y1 || 1)) * (H - pad.t - pad.b);
  const xy = (p: SweepPoint, key: (typeof SERIES)[number]["key"]) =>
    `${sx(xOf(p)).toFixed(1)},${sy(p[key]).toFixed(1)}`;
  const series = SERIES.map(
    (s) =>
      `<g class="series" data-series="${s.key}"><polyline fill="none" stroke="${s.color}" stroke-width="2" points="${ok.map((p) => xy(p, s.key)).join(" ")}"/>` +
      ok
        .map((p) => {
          const [cx, cy] = xy(p, s.key).split(",");
          return `<circle cx="${cx}" cy="${cy}" r="3" fill="${s.color}"><title>${esc(`${sweep.name} ${formatDuration(p.value)}: ${p[s.key]} RU/s, failover ≤ ${p.failoverMaxMs / 1000} s`)}</title></circle>`;
        })
        .join("") +
      "</g>",
  ).join("\n");
  // The swept value under each point of our line, so a reader can pick the setting off the chart.
  const labels = ok
    .map(
      (p) =>
        `<text x="${sx(xOf(p)).toFixed(1)}" y="${(sy(p.oursLeaseRuPerSecond) - 8).toFixed(1)}" font-size="10" text-anchor="middle" fill="#2471a3">${esc(formatDuration(p.value))}</text>`,
    )
    .join("");
  const grid = yTicks
    .map(
      (y) =>
        `<line x1="${pad.l}" y1="${sy(y).toFixed(1)}" x2="${W - pad.r}" y2="${sy(y).toFixed(1)}" stroke="#e5e8ea"/>` +
        `<text x="${pad.l - 8}" y="${(sy(y) + 4).toFixed(1)}" font-size="11" text-anchor="end">${y}</text>`,
    )
    .join("");
  const xLabels = xTicks
    .map(
      (x) =>
        `<text x="${sx(x).toFixed(1)}" y="${H - pad.b + 18}" font-size="11" text-anchor="middle">${x}</text>`,
    )
    .join("");
  // One row under the title, outside the plot, so no line is hidden behind it.
  let legendX = pad.l;
  const legend = [...SERIES]
    .reverse()
    .map((s) => {
      const x = legendX;
      legendX += 24 + s.label.length * 7.2 + 28;
      return (
        `<line x1="${x}" y1="46" x2="${x + 18}" y2="46" stroke="${s.color}" stroke-width="2"/>` +
        `<text x="${x + 24}" y="50" font-size="12">${esc(s.label)}</text>`
      );
    })
    .join("");
  const xTitle = failoverMoves
    ? "worst-case failover after a crash (s): expiration + acquire interval"
    : `${sweep.name} (s); failover stays ≤ ${(ok[0]?.failoverMaxMs ?? 0) / 1000} s`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="DejaVu Sans, sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="24" font-size="15" text-anchor="middle">${esc(`Lease container RU/s against failover — sweeping ${sweep.name}`)}</text>`,
    grid,
    `<line x1="${pad.l}" y1="${H - pad.b}" x2="${W - pad.r}" y2="${H - pad.b}" stroke="#333"/>`,
    `<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${H - pad.b}" stroke="#333"/>`,
    xLabels,
    `<text x="${(pad.l + W - pad.r) / 2}" y="${H - 14}" font-size="12" text-anchor="middle">${esc(xTitle)}</text>`,
    `<text x="16" y="${H / 2}" font-size="12" text-anchor="middle" transform="rotate(-90 16 ${H / 2})">lease container RU/s</text>`,
    series,
    labels,
    legend,
    "</svg>",
  ].join("\n");
}

const f = (n: number) => (Number.isInteger(n) ? n.toLocaleString("en-US") : n.toFixed(2));

export function formatTune(r: TuneReport): string {
  const i = r.input;
  const out = [
    `${i.hosts} host(s) × ${i.leases} lease(s), ${i.writesPerSecond} changes/s; renew ${i.leaseRenewIntervalMs} ms, acquire ${i.leaseAcquireIntervalMs} ms, expiration ${i.leaseExpirationIntervalMs} ms, poll ${i.feedPollDelayMs} ms`,
  ];
  const watch = i.leaseWatchIntervalMs;
  for (const [label, a] of [
    [watch > 0 ? `this processor, lease watch ${watch} ms` : "this processor (watch off)", r.ours],
    ["this processor without its lease watch (leaseWatchInterval 0)", r.oursWithoutWatch],
    [".NET processor / Functions trigger", r.dotnet],
  ] as const) {
    out.push("", `${label}:`);
    out.push("  lease container                           requests/h        RU/h");
    for (const row of a.leaseContainer)
      out.push(
        `    ${row.what.padEnd(40)}${f(row.requestsPerHour).padStart(12)}${f(row.ruPerHour).padStart(12)}`,
      );
    out.push("  monitored container");
    for (const row of a.monitoredContainer)
      out.push(
        `    ${row.what.padEnd(40)}${f(row.requestsPerHour).padStart(12)}${f(row.ruPerHour).padStart(12)}`,
      );
    out.push(
      `  lease container: ${f(a.leaseRequestsPerHour)} requests/h, ${f(a.leaseRuPerSecond)} RU/s; monitored: ${f(a.monitoredRuPerSecond)} RU/s; bootstrap ${a.bootstrapRequests} requests once`,
      `  failover after a crash: ${a.failoverMs.min / 1000}–${a.failoverMs.max / 1000} s; hand-off on stop: ≤ ${a.handoffMs / 1000} s`,
    );
    if (a === r.dotnet && r.dotnetMeasured) out.push(...formatDotnetMeasured(r.dotnetMeasured));
  }
  return out.join("\n");
}

/** The outcome of rendering the sweep chart to PNG: the file, or why only the SVG was written. */
export type PngOutcome = { written: string } | { skipped: string };

/**
 * Renders the sweep's SVG to PNG with resvg (a devDependency shipping prebuilt binaries per platform). Where it
 * cannot be loaded — another platform, a production install without devDependencies — the SVG stands alone and
 * the caller says why.
 */
export function renderPng(
  svg: string,
  pngPath: string,
  write: (path: string, data: Buffer) => void,
): PngOutcome {
  let Resvg: new (svg: string, options?: object) => { render(): { asPng(): Buffer } };
  try {
    ({ Resvg } = createRequire(import.meta.url)("@resvg/resvg-js"));
  } catch (e) {
    return {
      skipped: `PNG not written: @resvg/resvg-js cannot be loaded here (${(e as Error).message.split("\n")[0]})`,
    };
  }
  const png = new Resvg(svg, {
    background: "white",
    fitTo: { mode: "zoom", value: 2 },
    font: { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans" },
  })
    .render()
    .asPng();
  write(pngPath, png);
  return { written: pngPath };
}

/** `chart.svg` → `chart.png`; any other name gets `.png` appended. */
export function pngPathFor(svgPath: string): string {
  return svgPath.toLowerCase().endsWith(".svg") ? `${svgPath.slice(0, -4)}.png` : `${svgPath}.png`;
}
