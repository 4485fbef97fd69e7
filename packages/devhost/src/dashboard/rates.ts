import type { ContainerRate, RuPoint } from "./types.js";

/** Cumulative RU per "db/container". */
export type RuTotals = Record<string, number>;

/** One reading: the meter's totals and the dashboard's own tally, both cumulative, at `t` (ms). */
export interface RuSample {
  t: number;
  meter: RuTotals;
  dashboard: RuTotals;
}

/** What happened between two samples, per container: the meter's RU, the dashboard's, and the app's (the rest). */
export interface IntervalDelta {
  dtMs: number;
  meter: RuTotals;
  dashboard: RuTotals;
  app: RuTotals;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * The meter counts every request the emulator served, the dashboard's own reads included; the dashboard's tally
 * (x-ms-request-charge of its own client's responses) is subtracted so the app's figure is the app's traffic
 * only. A meter total that went down was reset (`POST /_emulator/meter/reset`): its whole new value is the delta.
 * Rounding of the meter (0.01 RU per operation kind) can leave a hair below zero: the app's figure is clamped at 0.
 */
export function intervalDelta(prev: RuSample, next: RuSample): IntervalDelta {
  const out: IntervalDelta = { dtMs: Math.max(0, next.t - prev.t), meter: {}, dashboard: {}, app: {} };
  const names = new Set([...Object.keys(next.meter), ...Object.keys(next.dashboard)]);
  for (const name of names) {
    const now = next.meter[name] ?? 0;
    const before = prev.meter[name] ?? 0;
    const dMeter = now >= before ? now - before : now;
    const dDash = Math.max(0, (next.dashboard[name] ?? 0) - (prev.dashboard[name] ?? 0));
    out.meter[name] = round2(dMeter);
    out.dashboard[name] = round2(dDash);
    out.app[name] = round2(Math.max(0, dMeter - dDash));
  }
  return out;
}

interface Interval extends IntervalDelta {
  /** End of the interval (ms). */
  t: number;
}

/**
 * Samples → RU/s per container (app and dashboard apart) over a recent window, totals since the first sample, and
 * a history of points for the plot, trimmed to `historyMs`. Time is the samples' own (`t`), so tests inject it.
 */
export class RuHistory {
  #last: RuSample | undefined;
  #intervals: Interval[] = [];
  readonly #totals = new Map<string, { meter: number; dashboard: number; app: number }>();

  constructor(private readonly o: { historyMs: number; windowMs: number }) {}

  add(sample: RuSample): void {
    const prev = this.#last;
    if (prev && sample.t < prev.t) return; // out of order: ignore
    this.#last = sample;
    if (!prev) return;
    const d = intervalDelta(prev, sample);
    if (d.dtMs === 0) return;
    for (const name of Object.keys(d.meter)) {
      const t = this.#totals.get(name) ?? { meter: 0, dashboard: 0, app: 0 };
      t.meter += d.meter[name];
      t.dashboard += d.dashboard[name];
      t.app += d.app[name];
      this.#totals.set(name, t);
    }
    this.#intervals.push({ ...d, t: sample.t });
    const oldest = sample.t - this.o.historyMs;
    while (this.#intervals.length > 0 && this.#intervals[0].t - this.#intervals[0].dtMs < oldest) {
      this.#intervals.shift();
    }
  }

  /** RU/s over the intervals that end within the last `windowMs` before `nowMs`, with totals since the start. */
  rates(nowMs: number): ContainerRate[] {
    const recent = this.#intervals.filter((i) => i.t > nowMs - this.o.windowMs);
    const seconds = recent.reduce((s, i) => s + i.dtMs, 0) / 1000;
    const rows: ContainerRate[] = [];
    for (const [name, total] of this.#totals) {
      const app = recent.reduce((s, i) => s + (i.app[name] ?? 0), 0);
      const dash = recent.reduce((s, i) => s + (i.dashboard[name] ?? 0), 0);
      rows.push({
        container: name,
        appRuPerSecond: seconds > 0 ? round2(app / seconds) : 0,
        dashboardRuPerSecond: seconds > 0 ? round2(dash / seconds) : 0,
        meterRuTotal: round2(total.meter),
        dashboardRuTotal: round2(total.dashboard),
        appRuTotal: round2(total.app),
      });
    }
    return rows.sort((a, b) => a.container.localeCompare(b.container));
  }

  /** One point per interval: app RU/s per container and the dashboard's RU/s over all containers. */
  points(): RuPoint[] {
    return this.#intervals.map((i) => {
      const s = i.dtMs / 1000;
      const app: Record<string, number> = {};
      for (const [name, ru] of Object.entries(i.app)) app[name] = round2(ru / s);
      const dash = Object.values(i.dashboard).reduce((a, b) => a + b, 0);
      return { t: i.t, app, dashboard: round2(dash / s) };
    });
  }
}
