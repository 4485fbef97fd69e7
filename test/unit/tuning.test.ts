/**
 * The lease cost model of `cosmos-feed tune` (packages/changefeed/src/tuning/model.ts) against the figures docs/changefeed.md
 * documents — and measured (6,990 requests/h at 4 hosts × 32 leases) — for both algorithms, plus the sweep, the
 * chart and the input checks.
 */
import { describe, expect, it } from "vitest";
import { tuningDefaults } from "../../bench/lib/tuning-defaults.js";
import { InvalidTuningInputError, RequestRu, tune } from "../../packages/changefeed/src/tuning/model.js";
import { parseDuration, parseSweep, runSweep, sweepSvg } from "../../packages/devhost/src/cli/tune.js";
import { RuModel } from "../../packages/emulator/src/ru/charges.js";

describe("lease cost model", () => {
  it.each([
    [4, 32, 14_661, 6_988],
    [4, 8, 4_496, 4_447],
    [2, 8, 3_942, 4_447],
    [2, 2, 1_401, 3_812],
    [1, 1, 700, 383],
  ])("idle, defaults, %i hosts × %i leases: .NET %i, ours %i lease-container requests/h (docs/changefeed.md)", (hosts, leases, dotnet, ours) => {
    const r = tune(tuningDefaults(hosts, leases));
    expect(r.dotnet.leaseRequestsPerHour).toBeCloseTo(dotnet, -1);
    expect(r.ours.leaseRequestsPerHour).toBeCloseTo(ours, -1);
  });

  it("prices a feed read (lease or monitored container) as the emulator charges it", () => {
    expect(RequestRu.feedEmpty).toBe(RuModel.changeFeedEmpty);
    expect(RequestRu.feedPageBase).toBe(RuModel.changeFeedBase);
    expect(RequestRu.feedPerDocument).toBe(RuModel.changeFeedPerDocument);
  });

  it("bounds failover by expiration … expiration + acquire, and the hand-off by the watch slot (ours) or a balancing round (.NET)", () => {
    const r = tune(tuningDefaults(4, 32));
    expect(r.ours.failoverMs).toEqual({ min: 60_000, max: 73_000 });
    expect(r.dotnet.failoverMs).toEqual({ min: 60_000, max: 73_000 });
    expect(r.ours.handoffMs).toBeLessThan(2_000);
    expect(r.dotnet.handoffMs).toBe(13_000);
  });

  it("idle leases poll the monitored container every feedPollDelay; writes turn polls into pages and checkpoints", () => {
    const idle = tune(tuningDefaults(1, 4, { feedPollDelayMs: 1_000 }));
    expect(idle.ours.monitoredContainer[0].requestsPerHour).toBe(4 * 3_600);
    const busy = tune(tuningDefaults(1, 4, { feedPollDelayMs: 1_000, writesPerSecond: 100 }));
    const pages = busy.dotnet.monitoredContainer[1].requestsPerHour;
    expect(pages).toBeGreaterThan(0);
    // .NET checkpoints every page; ours coalesces to at most one per maxCheckpointDelay (1 s) per lease.
    expect(busy.dotnet.leaseContainer[1].requestsPerHour).toBe(pages);
    expect(busy.ours.leaseContainer[1].requestsPerHour).toBeLessThanOrEqual(4 * 3_600);
    // A lease that checkpoints needs no separate renewals.
    expect(busy.ours.leaseContainer[0].requestsPerHour).toBeLessThan(
      idle.ours.leaseContainer[0].requestsPerHour,
    );
  });

  it("refuses impossible input with every reason", () => {
    expect(() => tune(tuningDefaults(0, 1, { leaseRenewIntervalMs: 90_000 }))).toThrow(
      InvalidTuningInputError,
    );
    expect(() => tune(tuningDefaults(0, 1, { leaseRenewIntervalMs: 90_000 }))).toThrow(
      /hosts must be ≥ 1[\s\S]*below leaseExpirationIntervalMs/,
    );
  });
});

describe("tune CLI helpers", () => {
  it("parses durations and sweeps", () => {
    expect(parseDuration("17s", "x")).toBe(17_000);
    expect(parseDuration("500ms", "x")).toBe(500);
    expect(parseDuration("2m", "x")).toBe(120_000);
    expect(parseDuration("1500", "x")).toBe(1_500);
    expect(() => parseDuration("soon", "--renew")).toThrow("--renew is a duration");
    expect(parseSweep("leaseExpirationInterval=10s..120s").values).toHaveLength(12);
    expect(parseSweep("feedPollDelay=100ms..1s:4").values).toEqual([100, 400, 700, 1_000]);
    expect(() => parseSweep("colour=1..2")).toThrow("--sweep is");
    expect(() => parseSweep("feedPollDelay=2s..1s")).toThrow("from < to");
  });

  it("a longer expiration costs ours fewer renewals and lengthens failover; the chart has a point per value", () => {
    const sweep = parseSweep("leaseExpirationInterval=20s..120s:6");
    const points = runSweep(tuningDefaults(4, 32), sweep);
    // 20 s is below 2 × renew (34 s): still valid (renew < expiration), renewed every 17 s.
    expect(points.every((p) => !p.skipped)).toBe(true);
    for (let k = 1; k < points.length; k++) {
      expect(points[k].failoverMaxMs).toBeGreaterThan(points[k - 1].failoverMaxMs);
      expect(points[k].oursLeaseRuPerSecond).toBeLessThanOrEqual(points[k - 1].oursLeaseRuPerSecond);
    }
    const svg = sweepSvg(sweep, points);
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg.match(/<circle /g)).toHaveLength(3 * points.length);
    expect(svg).toContain("this processor");
  });
});
