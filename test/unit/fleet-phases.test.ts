/**
 * The optional phases of bench:fleet (bench/fleet/phases.ts): the EPK windows the estimator phase cuts each
 * physical range into, and the figures the phases stored in bench/results/fleet.json — that each is consistent
 * with its own counts (one change feed read per lease, the deviation computed from the two rates it names). No time
 * is judged.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { epkWindows } from "../../bench/fleet/estimator-run.js";

const fleet = JSON.parse(readFileSync(new URL("../../bench/results/fleet.json", import.meta.url), "utf8"));

describe("the estimator phase's EPK windows", () => {
  for (const [min, max, count] of [
    ["", "FF", 7],
    ["", "3FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", 157],
    ["3FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "FF", 3],
  ] as const) {
    it(`cuts [${min || "''"}, ${max}) into ${count} adjacent, ordered, non-empty windows`, () => {
      const w = epkWindows(min, max, count);
      expect(w).toHaveLength(count);
      expect(w[0].min).toBe(min);
      expect(w[count - 1].max).toBe(max);
      for (let i = 0; i < count; i++) {
        expect(w[i].min < w[i].max, `window ${i}`).toBe(true);
        if (i > 0) expect(w[i].min).toBe(w[i - 1].max);
      }
      expect(new Set(w.map((x) => `${x.min}-${x.max}`)).size).toBe(count);
    });
  }
});

describe("bench/results/fleet.json's phase keys", () => {
  it("estimator: every lease estimated with one change feed read (plus retries), requests the sum of the meter's counts", () => {
    expect(fleet.estimator.runs.length).toBeGreaterThan(0);
    for (const r of fleet.estimator.runs) {
      // A retried read was sent twice at the wire; the first may or may not have reached the emulator.
      expect(r.wireRequests.feedRead).toBe(r.leases + r.feedReadRetries);
      const metered = r.requestsByContainer["fleet/monitored"].changeFeed.count;
      expect(metered).toBeGreaterThanOrEqual(r.leases);
      expect(metered).toBeLessThanOrEqual(r.wireRequests.feedRead);
      expect(r.wireRequests.total).toBe(
        r.wireRequests.feedRead + r.wireRequests.containerRead + r.wireRequests.other,
      );
      const counted = Object.values(r.requestsByContainer).flatMap((kinds) =>
        Object.values(kinds as Record<string, { count: number }>).map((k) => k.count),
      );
      expect(counted.reduce((a, b) => a + b, 0)).toBe(r.requests);
    }
  });

  it("emulator: each deviation is (simulation − real) / real of the rates stored, and the verdict follows it", () => {
    const { runs, agreementPct, allAgree } = fleet.emulator;
    expect(runs.length).toBeGreaterThan(0);
    for (const r of runs) {
      const dev =
        ((r.simulation.steadyRuPerSecond - r.real.steadyRuPerSecond) / r.real.steadyRuPerSecond) * 100;
      expect(r.deviationPct.steadyRuPerSecond).toBeCloseTo(dev, 1);
      expect(r.withinTolerance).toBe(Math.abs(dev) <= agreementPct);
      expect(r.simulation.doubleOwnership).toBe(0);
    }
    expect(allAgree).toBe(runs.every((r: { withinTolerance: boolean }) => r.withinTolerance));
  });
});
