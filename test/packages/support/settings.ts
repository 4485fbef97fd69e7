// Every timing knob of the outside suite (test/packages), named once. None is judged: the intervals make the
// processors of changefeed-service.test.ts hand leases over quickly, the waits only bound how long a broken build
// takes to fail (the outcome is waited for, never its duration).

/** How long a wait for an outcome may take before the test fails with what it waited for (bench/lib/until.ts). */
export { WAIT_MS } from "../../../bench/lib/until.js";

/** The change feed processors of the plain Node service (scenario 2), as its environment passes them (ms). */
export const PROCESSOR_INTERVALS = {
  LEASE_RENEW_MS: 500,
  LEASE_ACQUIRE_MS: 500,
  /** A killed instance's leases are free to take this long after its last renewal. */
  LEASE_EXPIRATION_MS: 4_000,
  FEED_POLL_MS: 100,
} as const;

/** The dev host's app load bound for the scenario 1 app (its default is 60 s; a loaded CI machine needs more). */
export const DEVHOST_WORKER_LOAD_TIMEOUT_MS = 600_000;
