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
 * and the returned promise rejects with FunctionTimeoutError. The handler itself cannot be stopped — the v4 model
 * gives it no cancellation signal, and the host's answer (restarting the worker process) would kill every other
 * invocation of the dev host — so it may still be running; its late result is ignored.
 */
export function withFunctionTimeout<T>(
  work: Promise<T>,
  functionName: string,
  timeoutMs: number | null,
  onTimeout: () => void,
): Promise<T> {
  if (timeoutMs === null) return work;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new FunctionTimeoutError(functionName, timeoutMs));
    }, timeoutMs);
    timer.unref?.();
  });
  // A late rejection of the abandoned work must not become an unhandled rejection.
  work.catch(() => {});
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
