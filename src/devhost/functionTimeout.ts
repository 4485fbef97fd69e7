import type { Clock } from "../shared/changefeed/clock.js";
import { formatTimeSpan, parseTimeSpan } from "./cosmos/retry.js";
import { DevHostError } from "./errors.js";

/**
 * host.json `functionTimeout` when absent: the host's default outside the Consumption plan (30 minutes). Core Tools
 * is not a dynamic (Consumption) SKU, so this is what it applies locally; Consumption's 5 minutes (max 10) and Flex
 * Consumption's 30 minutes (unbounded allowed) are Azure's.
 */
export const DEFAULT_FUNCTION_TIMEOUT_MS = 30 * 60_000;

/**
 * Parses host.json `functionTimeout`: a TimeSpan (`hh:mm:ss`, `d.hh:mm:ss`) of at least one second, or `-1` for no
 * timeout (null). Absent → the default. Anything else stops the dev host with a message, as the host refuses to start.
 */
export function parseFunctionTimeout(raw: unknown): number | null {
  if (raw === undefined || raw === null) return DEFAULT_FUNCTION_TIMEOUT_MS;
  if (raw === "-1" || raw === -1) return null;
  const ms = typeof raw === "string" ? parseTimeSpan(raw) : undefined;
  if (ms === undefined || ms < 1000) {
    throw new DevHostError(
      `host.json functionTimeout ${JSON.stringify(raw)} is not valid: use a TimeSpan of at least 00:00:01 (e.g. "00:05:00"), or "-1" for none.`,
      { code: "AppLoad" },
    );
  }
  return ms;
}

/** The error an invocation fails with when it outlives functionTimeout (the host's FunctionTimeoutException). */
export class FunctionTimeoutError extends DevHostError {
  constructor(functionName: string, timeoutMs: number) {
    super(
      `Timeout value of ${formatTimeSpan(timeoutMs)} was exceeded by function: Functions.${functionName}.`,
      {
        code: "FunctionTimeout",
      },
    );
    this.name = "FunctionTimeoutException";
  }
}

/**
 * Races an invocation against the timeout. On expiry `onTimeout` runs (the host's "Initiating cancellation." line)
 * and the returned promise rejects with FunctionTimeoutError; the caller then recycles the worker process, as the
 * host does (the v4 model gives a handler no cancellation signal). The timeout waits on
 * `clock` when one is given (tests move a FakeClock); otherwise on a timer that does not keep the process alive.
 */
export function withFunctionTimeout<T>(
  work: Promise<T>,
  functionName: string,
  timeoutMs: number | null,
  onTimeout: () => void,
  clock?: Clock,
): Promise<T> {
  if (timeoutMs === null) return work;
  // A late rejection of the abandoned work must not become an unhandled rejection.
  work.catch(() => {});
  let settled = false;
  const expire = (): never => {
    onTimeout();
    throw new FunctionTimeoutError(functionName, timeoutMs);
  };
  if (clock) {
    const done = new AbortController();
    const expired = clock.sleep(timeoutMs, done.signal).then((): never => {
      // Settled first: the race is over, and this promise is never looked at again.
      if (done.signal.aborted) return undefined as never;
      return expire();
    });
    return Promise.race([work, expired]).finally(() => done.abort());
  }
  // On the system clock, a plain timer (this runs for every invocation: no AbortController, no extra promise).
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      if (settled) return;
      try {
        expire();
      } catch (e) {
        reject(e);
      }
    }, timeoutMs);
    timer.unref?.();
  });
  expired.catch(() => {});
  return Promise.race([work, expired]).finally(() => {
    settled = true;
    clearTimeout(timer);
  });
}
