import { type TuningInput, type TuningResult, tune } from "../shared/tuning/model.js";
import { CliInputError } from "./leases.js";

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
  dotnetLeaseRuPerSecond: number;
  monitoredRuPerSecond: number;
  skipped?: string;
}

export function runSweep(base: TuningInput, sweep: Sweep): SweepPoint[] {
  return sweep.values.map((value) => {
    const input = { ...base, [SWEEPABLE[sweep.name]]: value };
    try {
      const r = tune(input);
      return {
        value,
        failoverMaxMs: r.ours.failoverMs.max,
        oursLeaseRuPerSecond: r.ours.leaseRuPerSecond,
        dotnetLeaseRuPerSecond: r.dotnet.leaseRuPerSecond,
        monitoredRuPerSecond: r.ours.monitoredRuPerSecond,
      };
    } catch (e) {
      return {
        value,
        failoverMaxMs: Number.NaN,
        oursLeaseRuPerSecond: Number.NaN,
        dotnetLeaseRuPerSecond: Number.NaN,
        monitoredRuPerSecond: Number.NaN,
        skipped: (e as Error).message,
      };
    }
  });
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");

/** Lease-container RU/s (y) against the worst-case failover time (x), one line per algorithm, as SVG. */
export function sweepSvg(sweep: Sweep, points: SweepPoint[]): string {
  const ok = points.filter((p) => !p.skipped);
  const W = 640;
  const H = 400;
  const pad = { l: 70, r: 20, t: 40, b: 50 };
  const xs = ok.map((p) => p.failoverMaxMs / 1000);
  const ys = ok.flatMap((p) => [p.oursLeaseRuPerSecond, p.dotnetLeaseRuPerSecond]);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const y1 = Math.max(...ys) * 1.1 || 1;
  const sx = (x: number) => pad.l + ((x - x0) / (x1 - x0 || 1)) * (W - pad.l - pad.r);
  const sy = (y: number) => H - pad.b - (y / y1) * (H - pad.t - pad.b);
  const line = (key: "oursLeaseRuPerSecond" | "dotnetLeaseRuPerSecond", color: string) =>
    `<polyline fill="none" stroke="${color}" stroke-width="2" points="${ok.map((p) => `${sx(p.failoverMaxMs / 1000).toFixed(1)},${sy(p[key]).toFixed(1)}`).join(" ")}"/>` +
    ok
      .map(
        (p) =>
          `<circle cx="${sx(p.failoverMaxMs / 1000).toFixed(1)}" cy="${sy(p[key]).toFixed(1)}" r="3" fill="${color}"/>`,
      )
      .join("");
  const ticks = (n: number, lo: number, hi: number) =>
    Array.from({ length: n + 1 }, (_v, k) => lo + ((hi - lo) * k) / n);
  const xTicks = ticks(5, x0, x1)
    .map(
      (x) =>
        `<text x="${sx(x).toFixed(1)}" y="${H - pad.b + 18}" font-size="11" text-anchor="middle">${x.toFixed(0)}</text>`,
    )
    .join("");
  const yTicks = ticks(4, 0, y1)
    .map(
      (y) =>
        `<text x="${pad.l - 8}" y="${(sy(y) + 4).toFixed(1)}" font-size="11" text-anchor="end">${y.toFixed(2)}</text>`,
    )
    .join("");
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" font-size="14" text-anchor="middle">${esc(`Lease container RU/s vs failover time — sweeping ${sweep.name}`)}</text>`,
    `<line x1="${pad.l}" y1="${H - pad.b}" x2="${W - pad.r}" y2="${H - pad.b}" stroke="#333"/>`,
    `<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${H - pad.b}" stroke="#333"/>`,
    xTicks,
    yTicks,
    `<text x="${W / 2}" y="${H - 12}" font-size="12" text-anchor="middle">worst-case failover (s): expiration + acquire interval</text>`,
    `<text x="16" y="${H / 2}" font-size="12" text-anchor="middle" transform="rotate(-90 16 ${H / 2})">lease container RU/s</text>`,
    line("dotnetLeaseRuPerSecond", "#c0392b"),
    line("oursLeaseRuPerSecond", "#2471a3"),
    `<text x="${W - pad.r - 160}" y="${pad.t + 10}" font-size="12" fill="#2471a3">this processor</text>`,
    `<text x="${W - pad.r - 160}" y="${pad.t + 26}" font-size="12" fill="#c0392b">.NET / Functions trigger</text>`,
    "</svg>",
  ].join("\n");
}

const f = (n: number) => (Number.isInteger(n) ? n.toLocaleString("en-US") : n.toFixed(2));

export function formatTune(r: TuningResult): string {
  const i = r.input;
  const out = [
    `${i.hosts} host(s) × ${i.leases} lease(s), ${i.writesPerSecond} changes/s; renew ${i.leaseRenewIntervalMs} ms, acquire ${i.leaseAcquireIntervalMs} ms, expiration ${i.leaseExpirationIntervalMs} ms, poll ${i.feedPollDelayMs} ms`,
  ];
  for (const [label, a] of [
    ["this processor", r.ours],
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
  }
  return out.join("\n");
}
