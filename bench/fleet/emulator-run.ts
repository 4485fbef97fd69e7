// The emulator phase of bench:fleet (issue 35): real processors on the embedded emulator beside the simulation of
// the same size. The real side is `measureScenario` (@cosmos-feed/devhost/tune, what `cosmos-feed tune --measure`
// runs): the emulator in this process over a real socket, H ChangeFeedProcessor instances in this one process (the
// processor allows several; each has its own CosmosClient and connections, as H hosts would), a monitored
// container with one physical range per lease (the emulator's limit: 64), every interval ÷ scale. Its steady
// lease-container requests and RU come from the emulator's meter over the window, per scenario second. The
// simulation runs the cold start of the same size at the same (unscaled) intervals; its steady window is the
// idle fleet after it. The two are compared on steady RU/s and requests/s, within ±MODEL_TOLERANCE_PCT.
import { checkMeasureRequest, type MeasureResult, measureScenario } from "@cosmos-feed/devhost/tune";
import { tuningDefaults } from "../lib/tuning-defaults.js";
import { TIMINGS } from "./hosts.js";
import { simulate } from "./scenarios.js";

/** The agreement asked of the simulation: steady lease-container RU/s within ±15 % of the real run's. */
export const AGREEMENT_PCT = 15;

const r2 = (n: number) => Math.round(n * 100) / 100;
const pct = (sim: number, real: number) => (real === 0 ? null : r2(((sim - real) / real) * 100));

export interface EmulatorComparison {
  hosts: number;
  leases: number;
  real: {
    scale: number;
    windowWallMs: number;
    windowScenarioMs: number;
    steadyRequestsPerSecond: number;
    steadyRuPerSecond: number;
    /** Cold start until balanced (every lease owned, shares even, no change of hands for two acquire intervals). */
    coldStartBalancedAcquireIntervals: number;
    coldStartRequests: number;
    ownedAtEnd: number[];
    byRow: { what: string; requestsPerSecond: number; ruPerSecond: number | null }[];
  };
  simulation: {
    steadyRequestsPerSecond: number;
    steadyRuPerSecond: number;
    /** Cold start until every host is within ±1 of its share (sampled each simulated second). */
    coldStartBalancedAcquireIntervals: number | null;
    coldStartRequests: number;
    doubleOwnership: number;
  };
  /** (simulation − real) / real, in %. */
  deviationPct: { steadyRuPerSecond: number | null; steadyRequestsPerSecond: number | null };
  withinTolerance: boolean;
}

/** Steady lease-container rates of a measurement, per scenario second: the model's rows plus what none accounts for. */
function leaseRates(m: MeasureResult) {
  const perS = (perHour: number) => perHour / 3600;
  const byRow = [
    ...m.rows
      // Without the "in all" row, which sums the others.
      .filter((r) => r.container === "lease" && !r.what.includes(" in all"))
      .map((r) => ({
        what: r.what,
        requestsPerHour: r.measured.requestsPerHour,
        ruPerHour: r.measured.ruPerHour,
      })),
    ...m.unaccounted
      .filter((u) => u.container === "lease")
      .map((u) => ({
        what: `unaccounted ${u.kind}: ${u.what}`,
        requestsPerHour: u.requestsPerHour,
        ruPerHour: u.ruPerHour,
      })),
  ];
  return {
    requestsPerSecond: r2(perS(byRow.reduce((s, r) => s + r.requestsPerHour, 0))),
    ruPerSecond: r2(perS(byRow.reduce((s, r) => s + (r.ruPerHour ?? 0), 0))),
    byRow: byRow.map((r) => ({
      what: r.what,
      requestsPerSecond: r2(perS(r.requestsPerHour)),
      ruPerSecond: r.ruPerHour === null ? null : r2(perS(r.ruPerHour)),
    })),
  };
}

/** One size: the real processors on the emulator, then the simulation of the same size. */
export async function compareWithEmulator(
  hosts: number,
  leases: number,
  opts: { scale: number; windowMs: number; seed: number; steadyMs: number },
): Promise<EmulatorComparison> {
  const req = checkMeasureRequest({
    scenario: tuningDefaults(hosts, leases),
    scale: opts.scale,
    windowMs: opts.windowMs,
  });
  const m = await measureScenario(req);
  const real = leaseRates(m);
  const sim = await simulate("ours", hosts, leases, opts.seed, {
    steadyMs: opts.steadyMs,
    balanceLimitMs: 600_000,
    events: ["cold-start"],
  });
  const cold = sim.events[0];
  const ruDev = pct(cold.steady.ruPerSecond, real.ruPerSecond);
  return {
    hosts,
    leases,
    real: {
      scale: m.scale,
      windowWallMs: Math.round(m.window.wallMs),
      windowScenarioMs: Math.round(m.window.scenarioMs),
      steadyRequestsPerSecond: real.requestsPerSecond,
      steadyRuPerSecond: real.ruPerSecond,
      coldStartBalancedAcquireIntervals: r2((m.bootstrap.balanceMs * m.scale) / TIMINGS.acquireMs),
      coldStartRequests: m.bootstrap.measured,
      ownedAtEnd: m.hosts.map((h) => h.owned),
      byRow: real.byRow,
    },
    simulation: {
      steadyRequestsPerSecond: cold.steady.requestsPerSecond,
      steadyRuPerSecond: cold.steady.ruPerSecond,
      coldStartBalancedAcquireIntervals: cold.balancedAfterAcquireIntervals,
      coldStartRequests: cold.requests,
      doubleOwnership: sim.doubleOwnership,
    },
    deviationPct: {
      steadyRuPerSecond: ruDev,
      steadyRequestsPerSecond: pct(cold.steady.requestsPerSecond, real.requestsPerSecond),
    },
    withinTolerance: ruDev !== null && Math.abs(ruDev) <= AGREEMENT_PCT,
  };
}
