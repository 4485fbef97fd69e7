import type { ContainerRequest } from "@azure/cosmos";
import { MODEL_TOLERANCE_PCT } from "./interop.js";

/** One hour in ms: the model's rates are per (scenario) hour. */
export const HOUR = 3_600_000;

/** The database the measurement creates on its emulator. */
export const DATABASE = "tune-measure";

/**
 * The lease container the scenario creates: partitioned by /id, TTL on, nothing indexed (a lease is read by id and
 * by the feed, never queried) — as this project's own lease container (src/shared/containers.json, role `leases`).
 */
export const LEAN_LEASE_CONTAINER = {
  partitionKey: { paths: ["/id"] },
  defaultTtl: -1,
  indexingPolicy: {
    indexingMode: "consistent",
    automatic: true,
    includedPaths: [],
    excludedPaths: [{ path: "/*" }],
  },
} satisfies Omit<ContainerRequest, "id">;

/** The knobs of a measurement, each named once. */
export const MeasureDefaults = {
  /** Every interval (and the write rate's period) is divided by this. */
  scale: 10,
  /** Wall-clock measuring window (ms). */
  windowMs: 60_000,
  /** Documents written per range before the processors start (seeding). */
  seedDocumentsPerLease: 5,
  /** Balanced = no lease changed hands for this many acquire intervals (scaled). */
  steadyAcquireIntervals: 2,
  /**
   * Give up balancing once the hosts' ownership has not changed for this many acquire intervals plus one expiration
   * (scaled)…
   */
  balanceTimeoutAcquireIntervals: 60,
  /**
   * … and at least this long (ms). Two hosts of a loaded 2-core machine (a CI run beside other work) owned no lease
   * 42 s after the phase began: the bound ends a run that is stuck, not one that is slow.
   */
  balanceTimeoutMinMs: 120_000,
  /** How often the balancing phase looks at the hosts (ms). */
  balanceCheckMs: 50,
  /** The writer's tick (ms): each tick writes the documents due by then. */
  writerTickMs: 20,
  /** Partition key values the writer spreads its documents over. */
  writerKeys: 1_000,
  /** Most hosts and leases (the emulator's ranges per container). */
  maxHosts: 64,
  maxLeases: 64,
  /** Most writes per wall-clock second (scenario rate × scale) the in-process writer attempts. */
  maxWallWritesPerSecond: 2_000,
  /** Rows whose model count in the window is below this are not held to the ±15 % goal (too few to compare). */
  meaningfulCount: 20,
  /** The goal: model within this many percent of the measurement. */
  goalPct: MODEL_TOLERANCE_PCT,
} as const;
