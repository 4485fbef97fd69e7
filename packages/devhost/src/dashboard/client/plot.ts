import type { RuPoint } from "../types.js";

/**
 * The RU/s plot's geometry, without the DOM (so it is unit-tested in Node): one polyline per container (the app's
 * RU/s) and one for the dashboard's own RU/s, over the last `spanMs` before `now`, y from 0 to a rounded maximum.
 */
export interface PlotOptions {
  width: number;
  height: number;
  /** Right edge (ms since epoch). */
  now: number;
  spanMs: number;
  /** Room for axis labels (left, bottom) and for the labels' overhang (top, right). */
  padLeft: number;
  padBottom: number;
  padTop?: number;
  padRight?: number;
}

export interface PlotSeries {
  name: string;
  color: string;
  /** SVG `points` of a polyline. */
  points: string;
  last: number;
}

export interface PlotGeometry {
  yMax: number;
  /** The highest value, when it is above yMax and drawn clipped at the top. */
  clippedPeak?: number;
  yTicks: { y: number; label: string }[];
  xTicks: { x: number; label: string }[];
  series: PlotSeries[];
  dashboard: PlotSeries;
}

/** Peaks more than this many times the 95th percentile are clipped rather than setting the scale. */
const PEAK_FACTOR = 3;

const PALETTE = ["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b", "#975a16", "#4a5568"];

/** 1, 2, 5 × 10^n at or above `v` (at least 1). */
function niceCeiling(v: number): number {
  if (!(v > 1)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

export function plotGeometry(history: readonly RuPoint[], o: PlotOptions): PlotGeometry {
  const from = o.now - o.spanMs;
  const shown = history.filter((p) => p.t >= from && p.t <= o.now);
  const names = [...new Set(shown.flatMap((p) => Object.keys(p.app)))].sort();
  const values = shown.flatMap((p) => [p.dashboard, ...Object.values(p.app)]).sort((a, b) => a - b);
  const max = values.length > 0 ? values[values.length - 1] : 0;
  // A few samples far above the rest (start-up, a burst) would flatten the steady state the user is tuning into a
  // line on the axis: the scale follows the 95th percentile then, and the clipped peaks are reported.
  const p95 = values.length > 0 ? values[Math.min(values.length - 1, Math.floor(values.length * 0.95))] : 0;
  const yMax = max > PEAK_FACTOR * p95 && p95 > 0 ? niceCeiling(p95 * 1.25) : niceCeiling(max);
  const clippedPeak = max > yMax ? max : undefined;
  const top = o.padTop ?? 0;
  const plotW = o.width - o.padLeft - (o.padRight ?? 0);
  const plotH = o.height - o.padBottom - top;
  const x = (t: number) => o.padLeft + ((t - from) / o.spanMs) * plotW;
  const y = (v: number) => top + plotH - (Math.min(yMax, Math.max(0, v)) / yMax) * plotH;
  const fmt = (n: number) => (Math.round(n * 10) / 10).toString();
  const line = (value: (p: RuPoint) => number) =>
    shown.map((p) => `${fmt(x(p.t))},${fmt(y(value(p)))}`).join(" ");
  const series = names.map((name, i) => ({
    name,
    color: PALETTE[i % PALETTE.length],
    points: line((p) => p.app[name] ?? 0),
    last: shown.length > 0 ? (shown[shown.length - 1].app[name] ?? 0) : 0,
  }));
  const dashboard = {
    name: "dashboard (own reads)",
    color: "#718096",
    points: line((p) => p.dashboard),
    last: shown.length > 0 ? shown[shown.length - 1].dashboard : 0,
  };
  const yTicks = [0, 0.5, 1].map((f) => ({ y: y(f * yMax), label: fmt(f * yMax) }));
  const minutes = Math.max(1, Math.round(o.spanMs / 60_000));
  const xTicks = Array.from({ length: minutes + 1 }, (_v, i) => {
    const ago = minutes - i;
    return { x: x(o.now - ago * 60_000), label: ago === 0 ? "now" : `−${ago} min` };
  });
  return { yMax, clippedPeak, yTicks, xTicks, series, dashboard };
}
