import { randomUUID } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Clock, systemClock } from "@cosmos-feed/core/clock";
import type { BindingLog } from "../cosmos/provision.js";
import { formatTimeSpan, parseRetryOptions, type RetryContext, runWithRetry } from "../cosmos/retry.js";
import { errorMessage } from "../errorMessage.js";
import {
  nextOccurrence,
  parseTimerSchedule,
  type TimerSchedule,
  TimerScheduleError,
  type TimerTimeZone,
} from "./ncrontab.js";

/** The schedule status the host keeps per timer (ISO strings). */
export interface ScheduleStatus {
  last: string;
  next: string;
  lastUpdated: string;
}

/** The timer object a v4 handler receives (`Timer` of @azure/functions, as the host serializes TimerInfo). */
export interface TimerInfo {
  isPastDue: boolean;
  schedule: { adjustForDST: boolean };
  /** null when the schedule monitor is off (useMonitor false), as in the host. */
  scheduleStatus: ScheduleStatus | null;
}

/** Where schedule statuses persist between runs (the host keeps them in blob storage). */
export interface ScheduleMonitorStore {
  get(timerName: string): Promise<ScheduleStatus | undefined>;
  set(timerName: string, status: ScheduleStatus): Promise<void>;
}

/** `default(DateTime)`: "never" in a status. */
export const NEVER = "0001-01-01T00:00:00.000Z";

/** A store in memory (one process's life). */
export function memoryScheduleMonitor(): ScheduleMonitorStore {
  const map = new Map<string, ScheduleStatus>();
  return {
    get: async (n) => map.get(n),
    set: async (n, s) => {
      map.set(n, { ...s });
    },
  };
}

/** A store of one JSON file per timer under `dir` (as the WebJobs FileSystemScheduleMonitor). */
export function fileScheduleMonitor(dir: string): ScheduleMonitorStore {
  const path = (n: string) => join(dir, `${n.replace(/[^\w.-]/g, "_")}.status.json`);
  return {
    async get(n) {
      try {
        const v = JSON.parse(await readFile(path(n), "utf8")) as Partial<ScheduleStatus>;
        if (typeof v.last === "string" && typeof v.next === "string" && typeof v.lastUpdated === "string") {
          return { last: v.last, next: v.next, lastUpdated: v.lastUpdated };
        }
        return undefined;
      } catch {
        return undefined;
      }
    },
    async set(n, s) {
      await mkdir(dir, { recursive: true });
      const tmp = `${path(n)}.${process.pid}.tmp`;
      await writeFile(tmp, JSON.stringify(s));
      await rename(tmp, path(n));
    },
  };
}

export type TimerInvocationReason = "Timer" | "IsPastDue" | "RunOnStartup";

export interface TimerInvocation {
  invocationId: string;
  reason: TimerInvocationReason;
  retryContext: RetryContext;
}

export interface StartTimerOptions {
  functionName: string;
  /** NCRONTAB (six fields, or five) or a TimeSpan `hh:mm:ss`; `%NAME%` resolved by the caller. */
  schedule: string;
  /** Invoke once at start (after a past-due invocation, if any, takes its place). Default false. */
  runOnStartup?: boolean;
  /** Persist the status and catch up a missed occurrence at start. Default: true unless the schedule fires more often than once a minute. */
  useMonitor?: boolean;
  /** Where statuses persist; default in memory. */
  monitor?: ScheduleMonitorStore;
  /** One execution: resolves on success, rejects on failure (a failure never stops the schedule). */
  invoke(timer: TimerInfo, invocation: TimerInvocation): Promise<void>;
  /** The function's retry, as for other triggers. */
  retry?: unknown;
  clock?: Clock;
  /** Default "utc" (Azure's default); "local" follows the process's TZ as the host follows the machine's zone. */
  timeZone?: TimerTimeZone;
  log?: BindingLog;
  abortSignal?: AbortSignal;
  newInvocationId?: () => string;
}

export interface RunningTimer {
  readonly schedule: TimerSchedule;
  readonly useMonitor: boolean;
  /** The next scheduled occurrence (ms since the epoch). */
  nextAt(): number;
  /** Stops the schedule and waits for an execution in flight. Idempotent. */
  stop(): Promise<void>;
}

/** Whether the schedule fires at least a minute apart (the host turns the monitor off below that). */
function atLeastMinutely(schedule: TimerSchedule, from: number, zone: TimerTimeZone): boolean {
  if (schedule.kind === "constant") return schedule.intervalMs >= 60_000;
  let t = from;
  for (let i = 0; i < 5; i++) {
    const n = nextOccurrence(schedule, t, zone);
    if (n === undefined) return true;
    if (i > 0 && n - t < 60_000) return false;
    t = n;
  }
  return true;
}

const iso = (ms: number) => new Date(ms).toISOString();
const ms = (text: string) => Date.parse(text);

/**
 * Runs a timer trigger as the WebJobs TimerListener does, on an injected clock: at start, with the monitor on,
 * a missed occurrence (the stored `next` is in the past) is invoked at once with isPastDue; otherwise
 * runOnStartup invokes at once; then each occurrence is invoked in turn. Executions never overlap; after one,
 * `next` is computed from the later of the run's start and its scheduled time (so an early wake-up never repeats
 * an occurrence, and a run that outlasts the interval is followed at once by one catch-up run — not one per
 * occurrence it covered — as in the host).
 */
export async function startTimer(o: StartTimerOptions): Promise<RunningTimer> {
  const clock = o.clock ?? systemClock;
  const zone = o.timeZone ?? "utc";
  const log: BindingLog = o.log ?? (() => {});
  const fn = o.functionName;
  const schedule = parseTimerSchedule(o.schedule);
  const policy = parseRetryOptions(o.retry);
  const useMonitor = o.useMonitor ?? atLeastMinutely(schedule, clock.now(), zone);
  const store = o.monitor ?? memoryScheduleMonitor();
  const newId = o.newInvocationId ?? randomUUID;
  const nextAfter = (t: number): number => {
    const n = nextOccurrence(schedule, t, zone);
    if (n === undefined)
      throw new TimerScheduleError(`Timer schedule '${o.schedule}' of '${fn}' has no next occurrence.`);
    return n;
  };

  const now = clock.now();
  let status: ScheduleStatus | undefined;
  let pastDue = false;
  if (useMonitor) {
    status = await store.get(fn);
    ({ status, pastDue } = await checkPastDue(status, now));
  }
  status ??= { last: NEVER, next: iso(nextAfter(now)), lastUpdated: NEVER };
  let current: ScheduleStatus = status;

  async function checkPastDue(
    last: ScheduleStatus | undefined,
    at: number,
  ): Promise<{ status: ScheduleStatus; pastDue: boolean }> {
    let s = last;
    if (!s) {
      s = { last: NEVER, next: iso(nextAfter(at)), lastUpdated: iso(at) };
      await store.set(fn, s);
    } else {
      // ScheduleMonitor.CheckPastDueAsync: a changed schedule is re-based, so it is not taken as past due.
      let basis: number;
      if (s.last !== NEVER) basis = ms(s.last);
      else if (s.lastUpdated !== NEVER) basis = ms(s.lastUpdated);
      else basis = at;
      let expected = nextAfter(basis);
      if (ms(s.next) !== expected) {
        let lastUpdated = basis;
        if (at > expected) {
          expected = nextAfter(at);
          lastUpdated = at;
        }
        s = { last: NEVER, next: iso(expected), lastUpdated: iso(lastUpdated) };
        await store.set(fn, s);
      }
    }
    return { status: s, pastDue: at > ms(s.next) };
  }

  const stopped = new AbortController();
  let inFlight: Promise<void> = Promise.resolve();

  const invokeOnce = async (reason: TimerInvocationReason, invocationTime: number) => {
    if (stopped.signal.aborted) return;
    const timer: TimerInfo = {
      isPastDue: reason === "IsPastDue",
      schedule: { adjustForDST: true },
      scheduleStatus: useMonitor ? { ...current } : null,
    };
    let lastId = "";
    const outcome = await runWithRetry({
      policy,
      clock,
      signal: stopped.signal,
      attempt: (retryContext) => {
        lastId = newId();
        return o.invoke(timer, { invocationId: lastId, reason, retryContext });
      },
      onRetry: ({ delayMs, nextAttempt, maxRetryCount }) =>
        log(
          "information",
          `Waiting for ${formatTimeSpan(delayMs)} before retrying function execution. Next attempt: '${nextAttempt}'. Max number of retry attempts: '${maxRetryCount}'.`,
          { invocationId: lastId },
        ),
    });
    if (!outcome.ok) {
      const e = outcome.error;
      log(
        "error",
        `Timer function '${fn}' failed (Id=${lastId}, ${outcome.attempts} attempt(s)): ${errorMessage(e)}. The schedule continues.`,
        { invocationId: lastId },
      );
    }
    // The next occurrence counts from the scheduled time when the timer woke early (clock skew).
    const scheduledNext = ms(current.next);
    const adjusted = reason === "Timer" && scheduledNext > invocationTime ? scheduledNext : invocationTime;
    current = { last: iso(adjusted), next: iso(nextAfter(adjusted)), lastUpdated: iso(adjusted) };
    if (useMonitor) await store.set(fn, current);
  };

  const run = async () => {
    const first: TimerInvocationReason | undefined = pastDue
      ? "IsPastDue"
      : o.runOnStartup
        ? "RunOnStartup"
        : undefined;
    if (first) {
      if (first === "IsPastDue")
        log("information", `Timer '${fn}' is past due (scheduled ${current.next}); running now.`);
      inFlight = invokeOnce(first, clock.now());
      await inFlight;
    }
    while (!stopped.signal.aborted) {
      const wait = ms(current.next) - clock.now();
      await clock.sleep(Math.max(0, wait), stopped.signal);
      if (stopped.signal.aborted) break;
      inFlight = invokeOnce("Timer", clock.now());
      await inFlight;
    }
  };
  const loop = run().catch((e: unknown) => log("error", `Timer '${fn}' stopped: ${errorMessage(e)}`));
  log(
    "information",
    `Timer '${fn}' schedule ${schedule.kind === "cron" ? `Cron: '${schedule.expression}'` : `Constant: ${schedule.expression}`} (${zone === "utc" ? "UTC" : "local time"}); next occurrence ${current.next}.`,
  );

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      stopped.abort();
      await inFlight.catch(() => undefined);
      await loop;
    })();
    return stopping;
  };
  if (o.abortSignal) {
    if (o.abortSignal.aborted) await stop();
    else o.abortSignal.addEventListener("abort", () => void stop(), { once: true });
  }
  return { schedule, useMonitor, nextAt: () => ms(current.next), stop };
}
