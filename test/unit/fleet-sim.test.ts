/**
 * A fast seeded slice of the fleet simulation (bench/fleet/, `npm run bench:fleet`): 5 real processors × 40 leases
 * on one simulated clock over the in-memory lease container: a cold start, a crash of one host, and a host paused
 * for longer than the expiration interval. Judged on counts from the store's truth, never on time measured here:
 * every event settles (every live host within ±1 of its fair share), also with 2 % of the requests lost, no lease
 * is ever held by two hosts at once, the paused host takes no lease back that its owner renewed, and the same seed
 * repeats exactly. And 16 × 64, past the size where hosts read the lease feed in their own slots only and learn of
 * events through the fleet signal: new hosts, a graceful scale-in and a crash each balance within two simulated
 * acquire intervals, and nothing moves after.
 */
import { describe, expect, it } from "vitest";
import { type FleetRun, simulate } from "../../bench/fleet/scenarios.js";

const options = {
  steadyMs: 40_000,
  balanceLimitMs: 600_000,
  events: ["crash-10pct", "pause-past-expiration"] as const,
};

/** What a run decided, without the CPU it took here. */
const outcome = (r: FleetRun) => {
  const { cpuMsPerHostSecond: _a, cpuSeconds: _b, ...rest } = r;
  return rest;
};

describe("the fleet simulation, 5 hosts × 40 leases", () => {
  it("settles after a cold start, a crash and a pause, with no double ownership and no stale takeover", async () => {
    const run = await simulate("ours", 5, 40, 7, options);
    expect(run.events.map((e) => e.event)).toEqual(["cold-start", "crash-10pct", "pause-past-expiration"]);
    for (const e of run.events) expect(e.balancedAfterMs, e.event).not.toBeNull();
    expect(run.doubleOwnership).toBe(0);
    // Only a request in flight across the pause, given up when the host resumes (its timeout fires before the
    // answer is read, as a stopped process's timers do), is reported.
    expect(
      run.errorSamples.every((e) => e.includes("RequestTimeoutError")),
      run.errorSamples.join("\n"),
    ).toBe(true);
    const [cold, crash, pause] = run.events;
    expect(cold.leases).toBe(40);
    expect(crash.hosts).toBe(4);
    // While the host is paused three hosts share its leases (≤ 14 each); back, it takes no renewed lease in one go.
    expect(pause.maxLeasesPerHost).toBeLessThanOrEqual(Math.ceil(40 / 3) + 1);
  });

  it("settles with 2 % of the requests lost (never answered: each caller's requestTimeout ends it), still no double ownership", async () => {
    const run = await simulate("ours", 5, 40, 3, { ...options, lossRate: 0.02 });
    for (const e of run.events) expect(e.balancedAfterMs, e.event).not.toBeNull();
    expect(run.doubleOwnership).toBe(0);
    // The losses show as requests given up (reported, retried), a failed start retried as a host supervisor would.
    expect(run.errors).toBeGreaterThan(0);
  });

  it("beyond 13 hosts (the fleet signal's size), balances every event in at most two rounds and then moves nothing", async () => {
    // 16 hosts × 1 s slots > a 13 s round: each host reads the lease feed in its own slot only, and learns of
    // events through the fleet signal. Simulated time, on the simulated clock: the same figures on any machine.
    const run = await simulate("ours", 16, 64, 5, {
      steadyMs: 60_000,
      balanceLimitMs: 600_000,
      events: ["scale-out-10pct", "scale-in-10pct-graceful", "crash-10pct"],
    });
    expect(run.events.map((e) => e.event)).toEqual([
      "cold-start",
      "scale-out-10pct",
      "scale-in-10pct-graceful",
      "crash-10pct",
    ]);
    for (const e of run.events) {
      expect(
        e.balancedAfterExpiryAcquireIntervals ?? e.balancedAfterAcquireIntervals,
        e.event,
      ).not.toBeNull();
      expect(
        e.balancedAfterExpiryAcquireIntervals ?? e.balancedAfterAcquireIntervals,
        e.event,
      ).toBeLessThanOrEqual(2);
      expect(e.steady.moves, e.event).toBe(0);
    }
    // Two newcomers take their share (64 / 18 → 3 or 4 each) from the others in one go, not one lease per round.
    const [, out] = run.events;
    expect(out.moves).toBeLessThanOrEqual(2 * 4);
    expect(run.doubleOwnership).toBe(0);
  });

  it("repeats exactly for the same seed", async () => {
    const a = await simulate("ours", 5, 40, 11, { ...options, events: ["pause-past-expiration"] });
    const b = await simulate("ours", 5, 40, 11, { ...options, events: ["pause-past-expiration"] });
    expect(outcome(b)).toEqual(outcome(a));
    expect(a.events[0].requests).toBeGreaterThan(0);
  });
});
