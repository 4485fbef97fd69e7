import { type Clock, systemClock } from "@cosmos-feed/core/clock";
import type { LogLevel } from "./coreTypes.js";
import { errorMessage } from "./errorMessage.js";
import type { TriggerRunner } from "./host.js";

/**
 * A trigger listener that fails to start does not stop the host: as the WebJobs SDK's `FunctionListener` does
 * in the Functions host (partial host startup), the failure is logged — "The listener for function
 * 'Functions.<name>' was unable to start." — and the start is retried in the background with
 * `RandomizedExponentialBackoffStrategy(2 s, 2 min)` until it succeeds or the host stops. So an app that creates
 * its containers on first use (this app's COSMOS_ENSURE_CONTAINERS) gets its triggers once a request made them.
 */
export const ListenerRetryDefaults = {
  minimumIntervalMs: 2_000,
  maximumIntervalMs: 120_000,
  /** The strategy's ±20 % randomization of each increment. */
  randomizationFactor: 0.2,
} as const;

/** The retry schedule of a trigger listener that could not start (its containers missing). */
export interface ListenerRetryOptions {
  /** First wait between attempts (ms). */
  minimumIntervalMs?: number;
  /** Longest wait between attempts (ms). */
  maximumIntervalMs?: number;
  /** The clock the waits run on (default the system's). */
  clock?: Clock;
  /** In [0, 1) (default Math.random). */
  random?: () => number;
}

export interface StartListenerOptions extends ListenerRetryOptions {
  functionName: string;
  start(): Promise<TriggerRunner>;
  /**
   * Whether a first failure is retried. Others are thrown as before (e.g. bad binding options: the real host
   * refuses those when it indexes the function, not when a listener starts).
   */
  retryable(error: unknown): boolean;
  /** Lines in the host's words (category Host.Startup). */
  log(level: LogLevel, message: string): void;
}

/**
 * The delays of WebJobs' RandomizedExponentialBackoffStrategy after failures: the minimum first, then
 * minimum + (2^(n−1) × minimum × a random factor in [0.8, 1.2)), capped at the maximum (and staying there).
 */
export function listenerRetryDelays(
  minimumMs: number,
  maximumMs: number,
  random: () => number = Math.random,
): () => number {
  let current = 0;
  let exponent = 0;
  return () => {
    if (current === maximumMs) return current;
    let next = minimumMs;
    if (exponent > 0) {
      const factor =
        1 -
        ListenerRetryDefaults.randomizationFactor +
        random() * 2 * ListenerRetryDefaults.randomizationFactor;
      next += factor * 2 ** (exponent - 1) * minimumMs;
    }
    if (next < maximumMs) {
      current = next;
      exponent++;
    } else {
      current = maximumMs;
    }
    return current;
  };
}

/**
 * Starts a listener; when the first start fails with a retryable error, logs it and returns a runner that keeps
 * retrying in the background. Its `stop()` ends the retries, and stops the listener if one started.
 */
export async function startListenerWithRetry(o: StartListenerOptions): Promise<TriggerRunner> {
  const name = `Functions.${o.functionName}`;
  try {
    return await o.start();
  } catch (e) {
    if (!o.retryable(e)) throw e;
    o.log("error", `The listener for function '${name}' was unable to start. ${errorMessage(e)}`);
  }
  const clock = o.clock ?? systemClock;
  const nextDelay = listenerRetryDelays(
    o.minimumIntervalMs ?? ListenerRetryDefaults.minimumIntervalMs,
    o.maximumIntervalMs ?? ListenerRetryDefaults.maximumIntervalMs,
    o.random,
  );
  const stopping = new AbortController();
  let started: TriggerRunner | undefined;
  const retrying = (async () => {
    for (let attempt = 1; !stopping.signal.aborted; attempt++) {
      await clock.sleep(nextDelay(), stopping.signal);
      if (stopping.signal.aborted) return;
      o.log("information", `Retrying to start listener for function '${name}' (Attempt ${attempt})`);
      try {
        started = await o.start();
      } catch (e) {
        o.log("error", `The listener for function '${name}' was unable to start. ${errorMessage(e)}`);
        continue;
      }
      o.log("information", `Listener successfully started for function '${name}' after ${attempt} retries.`);
      return;
    }
  })();
  let stopped: Promise<void> | undefined;
  return {
    stop: () => {
      stopped ??= (async () => {
        stopping.abort();
        // A start in flight finishes first; what it started is stopped.
        await retrying;
        await started?.stop();
      })();
      return stopped;
    },
  };
}
