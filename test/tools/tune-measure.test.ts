import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";
import { CliInputError } from "../../packages/devhost/src/cli/leases.js";
import {
  formatMeasure,
  measureRequestFromOptions,
  parseScale,
} from "../../packages/devhost/src/cli/tune-measure.js";
import { MeasureDefaults, type MeasureResult } from "../../packages/devhost/src/tuning/index.js";
import { ownershipReplaces } from "../../packages/devhost/src/tuning/result.js";

// `cosmos-feed tune --measure` as a user runs it: a short real measurement (2 hosts × 4 leases on the embedded
// emulator, intervals ÷ 20, a 4 s window) that reports every model row with its measured value, the start-up
// requests by kind and the three model cases; and bad input as one line and exit 1. What is judged here is what
// the run's own arithmetic and counts fix (the model's figures, the scaling, the sums); how close the measured
// rates come to the model depends on this machine's load and is judged in bench/tuning.bench.ts (its results and
// conclusions in bench/results/tuning.json), never here.

const run = promisify(execFile);
const tune = (args: string[]) =>
  run(process.execPath, [join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"), "tune", ...args], {
    cwd: repoRoot,
  });
const SEED = 20261126;

type Failure = { code: number; stderr: string };

describe("cosmos-feed tune --measure", () => {
  it("measures every model row on real processors, with deviations, bootstrap and the three model cases", async () => {
    const { stdout, stderr } = await tune([
      "--measure",
      "--hosts",
      "2",
      "--leases",
      "4",
      "--writes",
      "2",
      "--poll",
      "2s",
      "--scale",
      "20",
      "--window",
      "4s",
      "--json",
    ]);
    expect(stderr).toBe(""); // no progress bars without a terminal
    const r = JSON.parse(stdout) as MeasureResult;
    expect(r.scale).toBe(20);
    expect(r.scaledIntervals).toMatchObject({
      leaseRenewInterval: 850,
      feedPollDelay: 100,
      leaseWatchInterval: 50,
    });
    // The scenario time is the wall-clock window × the scale (both rounded to whole ms).
    expect(Math.abs(r.window.scenarioMs - r.window.wallMs * 20)).toBeLessThanOrEqual(20);
    expect(r.rows.map((x) => x.what)).toEqual([
      "renewals (replace)",
      "checkpoints (replace)",
      "lease view: lease feed reads in turns",
      "feed polls that find nothing",
      "feed pages with changes",
      "lease container in all (model rows)",
      "monitored container feed reads in all",
    ]);
    for (const row of r.rows) {
      expect(row.model.requestsPerHour).toBeGreaterThanOrEqual(0);
      expect(row.measured.requestsPerHour).toBeGreaterThanOrEqual(0);
    }
    const row = (what: string) => r.rows.find((x) => x.what === what) as MeasureResult["rows"][number];
    // The watch: one lease-feed read per 50 ms slot in all (3.6e6 / 1000 per scenario hour).
    const watch = row("lease view: lease feed reads in turns");
    expect(watch.model.requestsPerHour).toBe(3_600);
    // Every poll cycle ends with one empty read: 4 leases × 3.6e6 / 2 s.
    expect(row("feed polls that find nothing").model.requestsPerHour).toBe(7_200);
    // Each row's deviation is its measured value against its model value, and "judged" means enough requests
    // in the window for a percentage to mean something (the bench judges the deviations themselves).
    for (const x of r.rows) {
      const m = x.model.requestsPerHour;
      if (m > 0 && x.deviationPct.requests !== null) {
        // Reported to 0.1 %, from the measured rate before it was rounded to a whole request per hour.
        const pct = ((x.measured.requestsPerHour - m) / m) * 100;
        expect(Math.abs(x.deviationPct.requests - pct)).toBeLessThanOrEqual(0.05 + 50 / m + 1e-9);
      }
      expect(Math.abs(x.modelCountInWindow - (m * r.window.scenarioMs) / 3.6e6)).toBeLessThanOrEqual(0.51);
      expect(x.meaningful).toBe(x.modelCountInWindow >= MeasureDefaults.meaningfulCount);
    }
    expect(r.goal.judged).toBe(r.rows.filter((x) => x.meaningful).length);
    // The writer wrote in the window, and the handler saw pages of changes.
    expect(r.writer.writtenInWindow).toBeGreaterThan(0);
    expect(row("feed pages with changes").measured.requestsPerHour).toBeGreaterThan(0);
    // Start-up: 2 hosts × 4 leases started together; the model's count, and the measured one as the sum of its
    // kinds: at least the 4 leases, .info and .lock created.
    expect(r.bootstrap.model).toBe(3 * 4 + 12 + 9 + 2);
    expect(r.bootstrap.deviationPct).toBeCloseTo(
      ((r.bootstrap.measured - r.bootstrap.model) / r.bootstrap.model) * 100,
      0,
    );
    expect(r.bootstrap.byKind.create).toBeGreaterThanOrEqual(4 + 2);
    // Each host's first lease-feed read, counted from its processor's counters (not assumed), and the measured
    // total is the sum of what was counted by kind.
    expect(r.bootstrap.byKind.feedPins).toBe(2);
    expect(r.bootstrap.measured).toBe(
      Object.values(r.bootstrap.byKind).reduce((a, b) => (a ?? 0) + (b ?? 0), 0),
    );
    expect(r.hosts.map((h) => h.name)).toEqual(["host-00", "host-01"]);
    expect(r.model.oursWithoutWatch.leaseContainer[2].what).toBe("lease view: lease feed reads per host");
    expect(r.model.dotnet.leaseRequestsPerHour).toBeGreaterThan(0);
    // Both tallies of the lease container's requests are reported (how closely they agree: the bench).
    expect(r.leaseRequestsInWindow.meter).toBeGreaterThan(0);
    expect(r.leaseRequestsInWindow.processorCounters).toBe(
      r.hosts.reduce((a, h) => a + Object.values(h.leaseRequests).reduce((x, v) => x + v, 0), 0),
    );
    const text = formatMeasure(r);
    expect(text).toContain("every interval ÷ 20");
    expect(text).toMatch(/lease: renewals \(replace\)/);
    expect(text).toMatch(/within ±15 %: \d+ of \d+ judged rows/);
    expect(text).toContain("requests the model has no row for");
    expect(text).toMatch(/start-up \(bootstrap until balanced/);
    expect(text).toContain("this processor without the watch");
  });

  it("acquires and releases count as at most the replaces metered, requests and RU alike", () => {
    // Fewer replaces than ownership events in the window: both the count and its RU are clamped.
    expect(ownershipReplaces({ count: 3, ru: 15.6 }, 5)).toEqual({ count: 3, ru: 15.6 });
    expect(ownershipReplaces({ count: 10, ru: 52 }, 2)).toEqual({ count: 2, ru: 10.4 });
    expect(ownershipReplaces({ count: 0, ru: 0 }, 2)).toEqual({ count: 0, ru: 0 });
  });

  it("bad input is one line and exit 1", async () => {
    const cases: [string[], string][] = [
      [["--scale", "0"], "cosmos-feed tune: --scale is a number from 1 to 1000; got '0'."],
      [
        ["--renew", "40s"],
        "cosmos-feed tune: leaseExpirationInterval (6000 ms after scaling) must be at least twice leaseRenewInterval (4000 ms after scaling), as the processor requires.",
      ],
      [
        ["--window", "soon"],
        "cosmos-feed tune: --window is a duration such as 500ms, 17s, 2m or 1h; got 'soon'.",
      ],
      [["--poll", "1ms"], "cosmos-feed tune: feedPollDelay ÷ --scale is below 1 ms (1 ms ÷ 10)."],
    ];
    for (const [args, line] of cases) {
      const e = (await tune(["--measure", ...args]).catch((x: unknown) => x)) as Failure;
      expect(e.code).toBe(1);
      expect(e.stderr.trim().split("\n")).toEqual([line]);
    }
  });

  it("fuzz: --scale and the scenario options either parse or fail with a CliInputError", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.double().map(String), fc.integer().map(String)), (raw) => {
        try {
          const n = parseScale(raw);
          expect(n).toBeGreaterThanOrEqual(1);
          expect(n).toBeLessThanOrEqual(1_000);
        } catch (e) {
          expect(e).toBeInstanceOf(CliInputError);
        }
      }),
      { seed: SEED, numRuns: 1_000 },
    );
    const duration = fc.oneof(
      fc.string(),
      fc
        .tuple(fc.integer({ min: 0, max: 200_000 }), fc.constantFrom("ms", "s", "m", ""))
        .map(([n, u]) => `${n}${u}`),
    );
    fc.assert(
      fc.property(
        fc.record({
          hosts: fc.integer({ min: -2, max: 100 }),
          leases: fc.integer({ min: -2, max: 100 }),
          writes: fc.double({ min: -5, max: 1_000, noNaN: false }),
          renew: duration,
          acquire: duration,
          expiration: duration,
          poll: duration,
          watch: fc.option(duration, { nil: undefined }),
          checkpointDelay: fc.option(duration, { nil: undefined }),
          scale: fc.option(fc.oneof(fc.string(), fc.integer({ min: -5, max: 2_000 }).map(String)), {
            nil: undefined,
          }),
          window: fc.option(duration, { nil: undefined }),
        }),
        (o) => {
          try {
            const req = measureRequestFromOptions(o);
            const s = req.scaled;
            expect(2 * s.leaseRenewInterval).toBeLessThanOrEqual(s.leaseExpirationInterval);
            expect(s.feedPollDelay).toBeGreaterThanOrEqual(1);
            expect(req.scenario.leaseRenewIntervalMs).toBe(s.leaseRenewInterval * req.scale);
          } catch (e) {
            expect(e).toBeInstanceOf(CliInputError);
          }
        },
      ),
      { seed: SEED, numRuns: 1_000 },
    );
  });
});
