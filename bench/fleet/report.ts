import { tune } from "@cosmos-feed/changefeed/tuning";
import { TIMINGS } from "./hosts.js";
import type { FleetRun } from "./scenarios.js";

/**
 * What the fleet runs conclude, computed from the numbers: per size, ours next to the .NET model (ratios), the
 * tuning model's lease-container RU/s next to the simulation's, and each goal of issue 35 met or not, with what
 * failed it.
 */

const r2 = (n: number) => Math.round(n * 100) / 100;
const ratio = (a: number, b: number) => (b === 0 ? null : r2(a / b));

/** The steady state the goals and the tuning model are judged on: the idle fleet after its cold start. */
const coldSteady = (run: FleetRun) => run.events[0].steady;

export interface SizeSummary {
  hosts: number;
  leases: number;
  ours: { steadyRuPerSecond: number; steadyRequestsPerSecond: number; ruPerSecondPerLease: number };
  dotnetModel: { steadyRuPerSecond: number; steadyRequestsPerSecond: number; ruPerSecondPerLease: number };
  /** ours / .NET model. */
  ruRatio: number | null;
  requestsRatio: number | null;
  tuningModel: {
    oursRuPerSecond: number;
    /** (model − simulation) / simulation. */
    oursError: number;
    dotnetRuPerSecond: number;
    dotnetError: number;
  };
  /** Per event: balanced after (acquire intervals), moves, max leases per host; ours and the model. */
  events: {
    event: string;
    ours: {
      balancedAfterAcquireIntervals: number | null;
      moves: number;
      maxLeasesPerHost: number;
      steadyMoves: number;
    };
    dotnetModel: {
      balancedAfterAcquireIntervals: number | null;
      moves: number;
      maxLeasesPerHost: number;
      steadyMoves: number;
    };
  }[];
}

/** The tuning model (`tune`) for an idle fleet at the simulation's timings. */
export function tuningModel(hosts: number, leases: number): ReturnType<typeof tune> {
  return tune({
    hosts,
    leases,
    writesPerSecond: 0,
    leaseRenewIntervalMs: TIMINGS.renewMs,
    leaseAcquireIntervalMs: TIMINGS.acquireMs,
    leaseExpirationIntervalMs: TIMINGS.expirationMs,
    feedPollDelayMs: TIMINGS.pollMs,
  });
}

export function summarize(ours: FleetRun, dotnet: FleetRun): SizeSummary {
  const o = coldSteady(ours);
  const d = coldSteady(dotnet);
  const model = tuningModel(ours.hosts, ours.leases);
  const pick = (run: FleetRun, i: number) => {
    const e = run.events[i];
    const acquire =
      e.balancedAfterExpiryAcquireIntervals !== null
        ? e.balancedAfterExpiryAcquireIntervals
        : e.balancedAfterAcquireIntervals;
    return {
      balancedAfterAcquireIntervals: acquire,
      moves: e.moves,
      maxLeasesPerHost: e.maxLeasesPerHost,
      steadyMoves: e.steady.moves,
    };
  };
  return {
    hosts: ours.hosts,
    leases: ours.leases,
    ours: {
      steadyRuPerSecond: o.ruPerSecond,
      steadyRequestsPerSecond: o.requestsPerSecond,
      ruPerSecondPerLease: r2((o.ruPerSecond / ours.leases) * 1000) / 1000,
    },
    dotnetModel: {
      steadyRuPerSecond: d.ruPerSecond,
      steadyRequestsPerSecond: d.requestsPerSecond,
      ruPerSecondPerLease: r2((d.ruPerSecond / dotnet.leases) * 1000) / 1000,
    },
    ruRatio: ratio(o.ruPerSecond, d.ruPerSecond),
    requestsRatio: ratio(o.requestsPerSecond, d.requestsPerSecond),
    tuningModel: {
      oursRuPerSecond: model.ours.leaseRuPerSecond,
      oursError: r2((model.ours.leaseRuPerSecond - o.ruPerSecond) / o.ruPerSecond),
      dotnetRuPerSecond: model.dotnet.leaseRuPerSecond,
      dotnetError: r2((model.dotnet.leaseRuPerSecond - d.ruPerSecond) / d.ruPerSecond),
    },
    events: ours.events.map((e, i) => ({
      event: e.event,
      ours: pick(ours, i),
      dotnetModel: pick(dotnet, i),
    })),
  };
}

/** The processor's watch slot and renewal age at the simulated timings (renew 17 s, expiration 60 s: every 34 s). */
const WATCH_SLOT_MS = 1_000;
const RENEWAL_AGE_MS = 34_000;

export interface Goal {
  goal: string;
  met: boolean;
  /** What failed it (empty when met). */
  failures: string[];
}

export function goals(runs: FleetRun[], sizes: SizeSummary[]): Goal[] {
  const ours = runs.filter((r) => r.algorithm === "ours");
  const size = (r: { hosts: number; leases: number }) => `${r.hosts}×${r.leases}`;
  const goal = (name: string, failures: string[]): Goal => ({
    goal: name,
    met: failures.length === 0,
    failures,
  });
  // Where one host's watch reads are a renewal apart or more (hosts × leaseWatchInterval ≥ the renewal age), each
  // read brings every lease once: from there on, RU/s per lease must not grow with the fleet. Below, a read brings
  // only the leases written since, and the cost per lease is lower.
  const spans = sizes.filter((s) => s.hosts * WATCH_SLOT_MS >= RENEWAL_AGE_MS);
  const perLease = spans.map((s) => s.ours.ruPerSecondPerLease);
  const spread = perLease.length > 1 ? Math.max(...perLease) / Math.min(...perLease) : 1;
  const ceiling = Math.max(...perLease) * 1.2;
  const above = sizes.filter((s) => spans.length > 0 && s.ours.ruPerSecondPerLease > ceiling);
  return [
    goal(
      "balanced within 2 acquire intervals after every event (crash and pause: after the leases could expire)",
      ours.flatMap((r) =>
        r.events
          .map((e) => ({
            e,
            n: e.balancedAfterExpiryAcquireIntervals ?? e.balancedAfterAcquireIntervals,
          }))
          .filter(({ n }) => n === null || n > 2)
          .map(({ e, n }) => `${size(r)} ${e.event}: ${n === null ? "not balanced" : `${n} intervals`}`),
      ),
    ),
    goal(
      "zero lease moves in every steady window",
      ours.flatMap((r) =>
        r.events
          .filter((e) => e.steady.moves > 0)
          .map((e) => `${size(r)} after ${e.event}: ${e.steady.moves} moves`),
      ),
    ),
    goal(
      "steady lease-container RU/s ≤ 0.5 × the .NET model at every size",
      sizes.filter((s) => s.ruRatio === null || s.ruRatio > 0.5).map((s) => `${size(s)}: ratio ${s.ruRatio}`),
    ),
    goal(
      "steady RU/s linear in leases, not in hosts × leases: RU/s per lease within ±20 % across the sizes whose watch reads are a renewal apart (hosts × leaseWatchInterval ≥ 34 s), and no higher at the smaller sizes",
      [
        ...(spans.length < 2
          ? [
              `only ${spans.length} size(s) with hosts × leaseWatchInterval ≥ 34 s: add one (BENCH_FLEET_SIZES)`,
            ]
          : []),
        ...(spread <= 1.2
          ? []
          : [
              `RU/s per lease ranges over ×${r2(spread)}: ${spans.map((s) => `${size(s)} ${s.ours.ruPerSecondPerLease}`).join(", ")}`,
            ]),
        ...above.map((s) => `${size(s)}: ${s.ours.ruPerSecondPerLease} RU/s per lease, above ${r2(ceiling)}`),
      ],
    ),
    goal(
      "no double ownership in any run",
      ours.filter((r) => r.doubleOwnership > 0).map((r) => `${size(r)} seed ${r.seed}: ${r.doubleOwnership}`),
    ),
    goal(
      "the tuning model's lease-container RU/s within ±15 % of the simulation at every size",
      sizes
        .filter((s) => Math.abs(s.tuningModel.oursError) > 0.15)
        .map((s) => `${size(s)}: model ${s.tuningModel.oursRuPerSecond} vs ${s.ours.steadyRuPerSecond}`),
    ),
  ];
}
