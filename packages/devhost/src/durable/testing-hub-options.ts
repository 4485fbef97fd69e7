import type { LogLevel } from "./hub-options.js";
import type { TestHubFunctions } from "./testing-hub-functions.js";

/** The test hub's options and timings (testing-hub.ts), each timing named once with its unit and default. */

/**
 * The test hub's timings (real time, ms): the only ones it sets itself; the hub's others keep their defaults
 * (DURABLE_HUB_SETTINGS). Each is a {@link TestHubOptions} field of the same name.
 */
export const TEST_HUB_TIMINGS = {
  waitTimeoutMs: {
    unit: "ms",
    default: 30_000,
    description:
      "How long a wait (waitForCompletion, waitFor, waitForTimer …) waits before TestHubError WaitTimedOut.",
  },
  pollMs: {
    unit: "ms",
    default: 50,
    description:
      "How often a wait re-reads when no change woke it (the hub wakes it at each commit), and the dispatch feed's poll delay.",
  },
  scanIntervalMs: {
    unit: "ms",
    default: 100,
    description:
      "The hub's pending-work scan: a durable timer more than two scans ahead on the fake clock is picked up by it once the clock passes it.",
  },
} as const;

/**
 * A day (ms): the activity claims' lock, so that moving the fake clock never expires one while it runs.
 * @internal The test hub's own choice, not an option: stripped from the package's .d.ts.
 */
export const ACTIVITY_LOCK_MS = 86_400_000;

/** Options of `startTestHub`: the functions, where durable time starts, the timings. */
export interface TestHubOptions extends TestHubFunctions {
  /** Durable time's start on the fake clock (default 2026-01-01T00:00:00Z). */
  startTime?: Date;
  /** The task hub's name (default "TestHub"). */
  hubName?: string;
  /** {@link TEST_HUB_TIMINGS}.waitTimeoutMs (ms). */
  waitTimeoutMs?: number;
  /** {@link TEST_HUB_TIMINGS}.pollMs (ms). */
  pollMs?: number;
  /** {@link TEST_HUB_TIMINGS}.scanIntervalMs (ms). */
  scanIntervalMs?: number;
  /** Where the hub's log lines go (none by default). */
  log?: (level: LogLevel, message: string) => void;
}
