/**
 * What `cosmos-feed tune` parses and draws: durations and sweeps fuzzed with fast-check (fixed seed) — every input
 * either parses to the value it spells or fails with the CLI's own error — the chart's ticks, the PNG through resvg,
 * and the third case (this processor without its lease watch).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { tuningDefaults } from "../../bench/lib/tuning-defaults.js";
import { CliInputError } from "../../packages/devhost/src/cli/leases.js";
import {
  formatDuration,
  niceTicks,
  parseDuration,
  parseSweep,
  pngPathFor,
  renderPng,
  runSweep,
  SWEEPABLE,
  sweepSvg,
  tuneReport,
} from "../../packages/devhost/src/cli/tune.js";

const SEED = 20261126;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** Calls `f`; returns its value, or the CliInputError it threw (anything else fails the property). */
function parsedOrRefused<T>(f: () => T): T | CliInputError {
  try {
    return f();
  } catch (e) {
    if (e instanceof CliInputError) return e;
    throw e;
  }
}

describe("durations (fuzzed)", () => {
  it("a number with a unit is that many milliseconds", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.constantFrom("", "ms", "s", "m", "h"),
        (n, unit) => {
          const ms = parseDuration(`${n}${unit}`, "--x");
          expect(ms).toBe(n * UNIT_MS[(unit || "ms") as keyof typeof UNIT_MS]);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });

  it("any other text parses to a finite duration ≥ 0 or is refused with the option's name", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (raw) => {
        const r = parsedOrRefused(() => parseDuration(raw, "--renew"));
        if (r instanceof CliInputError) expect(r.message).toContain("--renew is a duration");
        else expect(Number.isFinite(r) && r >= 0).toBe(true);
      }),
      { seed: SEED, numRuns: 1_000 },
    );
  });

  it("formatDuration reads back as the same milliseconds for whole seconds, and within 50 ms otherwise", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000 }), (k) => {
        expect(parseDuration(formatDuration(k * 1_000), "x")).toBe(k * 1_000);
        // Below a minute, a tenth of a second: within 50 ms.
        expect(Math.abs(parseDuration(formatDuration(k), "x") - k)).toBeLessThanOrEqual(50);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });
});

describe("sweeps (fuzzed)", () => {
  it("a well-formed sweep gives `steps` increasing values from `from` to `to`", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...(Object.keys(SWEEPABLE) as (keyof typeof SWEEPABLE)[])),
        fc.integer({ min: 1, max: 600 }),
        fc.integer({ min: 1, max: 600 }),
        fc.integer({ min: 2, max: 200 }),
        (name, from, extra, steps) => {
          const sweep = parseSweep(`${name}=${from}s..${from + extra}s:${steps}`);
          expect(sweep.name).toBe(name);
          expect(sweep.values).toHaveLength(steps);
          expect(sweep.values[0]).toBe(from * 1_000);
          expect(sweep.values[steps - 1]).toBe((from + extra) * 1_000);
          for (let k = 1; k < steps; k++) expect(sweep.values[k]).toBeGreaterThanOrEqual(sweep.values[k - 1]);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it("any other text is refused with the CLI's error, never a crash", () => {
    const near = fc
      .tuple(
        fc.constantFrom("leaseExpirationInterval", "feedPollDelay", "colour", ""),
        fc.string({ maxLength: 6 }),
        fc.string({ maxLength: 6 }),
        fc.string({ maxLength: 4 }),
      )
      .map(([n, a, b, c]) => `${n}=${a}..${b}${c ? `:${c}` : ""}`);
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 30 }), near), (raw) => {
        const r = parsedOrRefused(() => parseSweep(raw));
        if (r instanceof CliInputError) expect(r.message).toMatch(/^--sweep|is a duration/);
        else {
          expect(r.values.length).toBeGreaterThanOrEqual(2);
          expect(r.values.every(Number.isFinite)).toBe(true);
        }
      }),
      { seed: SEED, numRuns: 1_000 },
    );
  });
});

describe("the chart", () => {
  it("ticks are round, increasing and cover the range", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        fc.integer({ min: 2, max: 10 }),
        (a, b, n) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          const ticks = niceTicks(lo, hi, n);
          expect(ticks[0]).toBeLessThanOrEqual(lo);
          expect(ticks[ticks.length - 1]).toBeGreaterThanOrEqual(hi * (1 - 1e-9));
          expect(ticks.length).toBeLessThanOrEqual(2 * n + 2);
          for (let k = 1; k < ticks.length; k++) expect(ticks[k]).toBeGreaterThan(ticks[k - 1]);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });

  it("plots against failover when the swept interval moves it, else against the interval itself", () => {
    const expiration = parseSweep("leaseExpirationInterval=30s..90s:3");
    expect(sweepSvg(expiration, runSweep(tuningDefaults(4, 32), expiration))).toContain(
      "worst-case failover",
    );
    const renew = parseSweep("leaseRenewInterval=5s..25s:3");
    const svg = sweepSvg(renew, runSweep(tuningDefaults(4, 32), renew));
    expect(svg).toContain("leaseRenewInterval (s); failover stays ≤ 73 s");
    // Each point is labelled with the swept value.
    for (const label of [">5s<", ">15s<", ">25s<"]) expect(svg).toContain(label);
  });

  it("renders the SVG to a PNG twice its size through resvg", () => {
    const sweep = parseSweep("leaseExpirationInterval=30s..90s:3");
    const files = new Map<string, Buffer>();
    const outcome = renderPng(sweepSvg(sweep, runSweep(tuningDefaults(2, 8), sweep)), "chart.png", (p, d) =>
      files.set(p, d),
    );
    expect(outcome).toEqual({ written: "chart.png" });
    const png = files.get("chart.png");
    expect(png?.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect([png?.readUInt32BE(16), png?.readUInt32BE(20)]).toEqual([1440, 880]);
    expect(pngPathFor("out/sweep.SVG")).toBe("out/sweep.png");
    expect(pngPathFor("chart")).toBe("chart.png");
  });
});

describe("this processor without its lease watch", () => {
  it("lists leases per host per acquire interval and hands off at the next balancing round", () => {
    const r = tuneReport(tuningDefaults(4, 32));
    const finding = (a: typeof r.ours) => a.leaseContainer[a.leaseContainer.length - 1];
    expect(finding(r.oursWithoutWatch).requestsPerHour).toBe(Math.round((4 * 3_600_000) / 13_000));
    expect(r.oursWithoutWatch.handoffMs).toBe(13_000);
    expect(r.ours.handoffMs).toBeLessThan(r.oursWithoutWatch.handoffMs);
    // Renewals and checkpoints do not depend on the watch.
    expect(r.oursWithoutWatch.leaseContainer[0]).toEqual(r.ours.leaseContainer[0]);
  });
});
