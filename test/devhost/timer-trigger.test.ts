import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { WAIT_MS } from "../../bench/lib/until.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import {
  fileScheduleMonitor,
  memoryScheduleMonitor,
  NEVER,
  type RunningTimer,
  type StartTimerOptions,
  startTimer,
  type TimerInfo,
  type TimerInvocation,
} from "../../packages/devhost/src/timer/timer.js";

const T0 = Date.parse("2026-11-23T10:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString();

interface Call {
  at: string;
  timer: TimerInfo;
  invocation: TimerInvocation;
}

const running: RunningTimer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()));
});

async function start(
  clock: FakeClock,
  options: Partial<StartTimerOptions> & { schedule: string },
  handler: (call: Call) => Promise<void> | void = () => {},
) {
  const calls: Call[] = [];
  const logs: string[] = [];
  const timer = await startTimer({
    functionName: "tick",
    clock,
    log: (level, message) => logs.push(`${level}: ${message}`),
    invoke: async (timerInfo, invocation) => {
      const call = { at: iso(clock.now()), timer: timerInfo, invocation };
      calls.push(call);
      await handler(call);
    },
    ...options,
  });
  running.push(timer);
  return { timer, calls, logs };
}

describe("startTimer on a fake clock", () => {
  it("invokes at each occurrence with the v4 Timer object and the status it had", async () => {
    const clock = new FakeClock(T0);
    const { timer, calls } = await start(clock, { schedule: "0 */5 * * * *" });
    expect(timer.useMonitor).toBe(true);
    expect(iso(timer.nextAt())).toBe("2026-11-23T10:05:00.000Z");
    await clock.advance(4 * 60_000);
    expect(calls).toHaveLength(0);
    await clock.advance(11 * 60_000);
    expect(calls.map((c) => c.at)).toEqual([
      "2026-11-23T10:05:00.000Z",
      "2026-11-23T10:10:00.000Z",
      "2026-11-23T10:15:00.000Z",
    ]);
    expect(calls[0]?.timer).toEqual({
      isPastDue: false,
      schedule: { adjustForDST: true },
      scheduleStatus: { last: NEVER, next: "2026-11-23T10:05:00.000Z", lastUpdated: iso(T0) },
    });
    expect(calls[1]?.timer.scheduleStatus).toEqual({
      last: "2026-11-23T10:05:00.000Z",
      next: "2026-11-23T10:10:00.000Z",
      lastUpdated: "2026-11-23T10:05:00.000Z",
    });
    expect(calls.every((c) => c.invocation.reason === "Timer")).toBe(true);
    expect(new Set(calls.map((c) => c.invocation.invocationId)).size).toBe(3);
  });

  it("a schedule more often than once a minute has no monitor (scheduleStatus null); a TimeSpan schedule counts from the last run", async () => {
    const clock = new FakeClock(T0);
    const { timer, calls } = await start(clock, { schedule: "*/10 * * * * *" });
    expect(timer.useMonitor).toBe(false);
    await clock.advance(30_000);
    expect(calls.map((c) => c.at)).toEqual([iso(T0 + 10_000), iso(T0 + 20_000), iso(T0 + 30_000)]);
    expect(calls[0]?.timer.scheduleStatus).toBeNull();

    const clock2 = new FakeClock(T0 + 123);
    const constant = await start(clock2, { schedule: "00:00:45", functionName: "constant" });
    await clock2.advance(100_000);
    expect(constant.calls.map((c) => c.at)).toEqual([iso(T0 + 123 + 45_000), iso(T0 + 123 + 90_000)]);
  });

  it("runOnStartup invokes at once, then follows the schedule", async () => {
    const clock = new FakeClock(T0 + 30_000);
    const { calls } = await start(clock, { schedule: "0 * * * * *", runOnStartup: true });
    await clock.advance(0);
    expect(calls.map((c) => [c.at, c.invocation.reason])).toEqual([[iso(T0 + 30_000), "RunOnStartup"]]);
    await clock.advance(30_000);
    expect(calls.map((c) => [c.at, c.invocation.reason])).toEqual([
      [iso(T0 + 30_000), "RunOnStartup"],
      [iso(T0 + 60_000), "Timer"],
    ]);
  });

  it("with the monitor, a restart after a missed occurrence invokes once with isPastDue, then resumes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "timer-monitor-"));
    try {
      const monitor = fileScheduleMonitor(dir);
      const clock = new FakeClock(T0);
      const first = await start(clock, { schedule: "0 0 * * * *", monitor });
      await clock.advance(3_600_000);
      expect(first.calls.map((c) => c.at)).toEqual(["2026-11-23T11:00:00.000Z"]);
      await first.timer.stop();
      expect(await monitor.get("tick")).toEqual({
        last: "2026-11-23T11:00:00.000Z",
        next: "2026-11-23T12:00:00.000Z",
        lastUpdated: "2026-11-23T11:00:00.000Z",
      });

      // Down from 11:00 to 14:30: the 12:00, 13:00 and 14:00 runs were missed → one past-due run at start.
      const later = new FakeClock(Date.parse("2026-11-23T14:30:00Z"));
      const second = await start(later, { schedule: "0 0 * * * *", monitor, runOnStartup: true });
      await later.advance(0);
      // The status write after the run is real file I/O: wait for the timer to go back to sleep.
      await vi.waitFor(() => expect(later.pendingTimers).toBe(1), { timeout: WAIT_MS });
      expect(second.calls.map((c) => [c.at, c.invocation.reason, c.timer.isPastDue])).toEqual([
        ["2026-11-23T14:30:00.000Z", "IsPastDue", true],
      ]);
      expect(second.calls[0]?.timer.scheduleStatus?.next).toBe("2026-11-23T12:00:00.000Z");
      await later.advance(30 * 60_000);
      expect(second.calls.map((c) => c.at)).toEqual(["2026-11-23T14:30:00.000Z", "2026-11-23T15:00:00.000Z"]);
      await second.timer.stop();

      // A changed schedule is re-based, not taken as past due.
      const third = await start(new FakeClock(Date.parse("2026-11-23T15:10:00Z")), {
        schedule: "0 30 * * * *",
        monitor,
      });
      expect(iso(third.timer.nextAt())).toBe("2026-11-23T15:30:00.000Z");
      expect(third.calls).toHaveLength(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("never overlaps executions: a run longer than the interval is followed by one catch-up run, not one per missed occurrence", async () => {
    const clock = new FakeClock(T0);
    let active = 0;
    let maxActive = 0;
    const { timer, calls } = await start(clock, { schedule: "0 * * * * *" }, async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await clock.sleep(150_000); // 2.5 minutes
      active--;
    });
    await clock.advance(6 * 60_000);
    expect(maxActive).toBe(1);
    // As TimerListener: `next` counts from the run's start (10:01 → 10:02, already past when it ends at 10:03:30),
    // so one run follows at once; that one (10:03:30 → 10:04) ends at 10:06, and the next follows at once again.
    expect(calls.map((c) => c.at)).toEqual([
      "2026-11-23T10:01:00.000Z",
      "2026-11-23T10:03:30.000Z",
      "2026-11-23T10:06:00.000Z",
    ]);
    const stopping = timer.stop();
    await clock.advance(150_000);
    await stopping;
    expect(calls).toHaveLength(3);
  });

  it("a failing run is retried per `retry`, logged with its invocation id, and the schedule goes on", async () => {
    const clock = new FakeClock(T0);
    let n = 0;
    const { calls, logs } = await start(
      clock,
      {
        schedule: "0 */10 * * * *",
        retry: { strategy: "fixedDelay", maxRetryCount: 2, delayInterval: { seconds: 5 } },
      },
      () => {
        n++;
        throw new Error(`boom ${n}`);
      },
    );
    await clock.advance(10 * 60_000 + 11_000);
    expect(calls.map((c) => [c.at, c.invocation.retryContext.retryCount])).toEqual([
      ["2026-11-23T10:10:00.000Z", 0],
      ["2026-11-23T10:10:05.000Z", 1],
      ["2026-11-23T10:10:10.000Z", 2],
    ]);
    expect(calls[2]?.invocation.retryContext).toMatchObject({ maxRetryCount: 2 });
    const lastId = calls[2]?.invocation.invocationId as string;
    expect(logs.filter((l) => l.startsWith("error:"))).toEqual([
      `error: Timer function 'tick' failed (Id=${lastId}, 3 attempt(s)): boom 3. The schedule continues.`,
    ]);
    expect(
      logs.some((l) =>
        l.includes("Waiting for 00:00:05 before retrying function execution. Next attempt: '1'"),
      ),
    ).toBe(true);
    await clock.advance(10 * 60_000);
    expect(calls.at(-3)?.at).toBe("2026-11-23T10:20:00.000Z");
  });

  it("stop waits for the execution in flight and nothing runs after it", async () => {
    const clock = new FakeClock(T0);
    let release: () => void = () => {};
    let finished = false;
    const { timer, calls } = await start(
      clock,
      { schedule: "0 * * * * *", monitor: memoryScheduleMonitor() },
      () =>
        new Promise<void>((resolve) => {
          release = () => {
            finished = true;
            resolve();
          };
        }),
    );
    await clock.advance(60_000);
    expect(calls).toHaveLength(1);
    const stopping = timer.stop();
    let stopped = false;
    void stopping.then(() => {
      stopped = true;
    });
    await clock.advance(0);
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(finished).toBe(true);
    await clock.advance(5 * 60_000);
    expect(calls).toHaveLength(1);
  });

  it("refuses a bad schedule or retry with a clear error", async () => {
    const clock = new FakeClock(T0);
    await expect(start(clock, { schedule: "0 0 0 31 4 *" })).rejects.toThrowError(/never occurs/);
    await expect(
      start(clock, { schedule: "0 * * * *", retry: { strategy: "linear", maxRetryCount: 1 } }),
    ).rejects.toThrowError(/retry.strategy must be 'fixedDelay' or 'exponentialBackoff'/);
  });
});
