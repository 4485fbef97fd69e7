import type { Clock } from "@cosmos-feed/core/clock";
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

/** An invocation waiting on the system clock's deadline list: when it times out, and what to do then. */
interface Deadline {
  at: number;
  expire(): void;
}

/**
 * Every invocation's functionTimeout on the system clock, on one timer for all of them: per timeout length a list in
 * the order the invocations started, which is the order their deadlines fall, and one timer armed for the earliest
 * deadline. An invocation that ends leaves its list; the timer stays armed (unref'd: it keeps no process alive) and,
 * when it fires, expires what is due and is armed again for what is left. So a steady stream of invocations arms no
 * timer at all after the first, where a timer per invocation cost an allocation, a place in node's timer lists and
 * its removal every time.
 */
class SystemDeadlines {
  readonly #lists = new Map<number, Set<Deadline>>();
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #armed = 0;

  /** Adds an invocation's deadline; returns the function that removes it (the invocation ended first). */
  add(timeoutMs: number, expire: () => void): () => void {
    const entry: Deadline = { at: performance.now() + timeoutMs, expire };
    let list = this.#lists.get(timeoutMs);
    if (!list) {
      list = new Set();
      this.#lists.set(timeoutMs, list);
    }
    list.add(entry);
    if (entry.at < this.#timerAt) this.#arm(entry.at);
    const own = list;
    return () => {
      own.delete(entry);
    };
  }

  /** Timers armed so far (tests count them). */
  get armed(): number {
    return this.#armed;
  }

  #arm(at: number): void {
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#armed++;
    // At least 1 ms: node's timers have millisecond resolution, and one a hair early is armed again for the rest.
    this.#timer = setTimeout(() => this.#fire(), Math.max(1, Math.ceil(at - performance.now())));
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    const due: Deadline[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const [timeoutMs, list] of this.#lists) {
      for (const entry of list) {
        if (entry.at > now) {
          next = Math.min(next, entry.at); // the first not due: the rest of this list falls later still
          break;
        }
        list.delete(entry);
        due.push(entry);
      }
      if (list.size === 0) this.#lists.delete(timeoutMs);
    }
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
    for (const entry of due) entry.expire();
  }
}

const systemDeadlines = new SystemDeadlines();

/** How many timers functionTimeout has armed on the system clock in this process (tests count them). */
export function functionTimeoutTimersArmed(): number {
  return systemDeadlines.armed;
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
  let settled = false;
  const expire = (): never => {
    onTimeout();
    throw new FunctionTimeoutError(functionName, timeoutMs);
  };
  if (clock) {
    // A late rejection of the abandoned work must not become an unhandled rejection.
    work.catch(() => {});
    const done = new AbortController();
    const expired = clock.sleep(timeoutMs, done.signal).then((): never => {
      // Settled first: the race is over, and this promise is never looked at again.
      if (done.signal.aborted) return undefined as never;
      return expire();
    });
    return Promise.race([work, expired]).finally(() => done.abort());
  }
  // On the system clock: the shared deadline list (one timer for every invocation) and one promise, no race; the
  // work's rejection is always handled here, even one that comes after the timeout.
  return new Promise<T>((resolve, reject) => {
    const remove = systemDeadlines.add(timeoutMs, () => {
      if (settled) return;
      settled = true;
      try {
        expire();
      } catch (e) {
        reject(e);
      }
    });
    work.then(
      (value) => {
        if (settled) return;
        settled = true;
        remove();
        resolve(value);
      },
      (e: unknown) => {
        if (settled) return;
        settled = true;
        remove();
        reject(e);
      },
    );
  });
}
