import { describe, expect, it } from "vitest";
import { FakeClock } from "../../packages/core/src/clock.js";
import type { LogLevel } from "../../packages/devhost/src/coreTypes.js";
import type { TriggerRunner } from "../../packages/devhost/src/host.js";
import { listenerRetryDelays, startListenerWithRetry } from "../../packages/devhost/src/listenerRetry.js";

// A trigger listener that cannot start (its containers are missing) is retried in the background as the Functions
// host's FunctionListener does, instead of stopping the host. The end-to-end case (the app's containers created by
// its first request, COSMOS_ENSURE_CONTAINERS) is in test/e2e/app.test.ts.

class MissingContainer extends Error {}

function harness(failures: number) {
  const clock = new FakeClock();
  const lines: { level: LogLevel; message: string }[] = [];
  let attempts = 0;
  let stops = 0;
  const start = async (): Promise<TriggerRunner> => {
    attempts++;
    if (attempts <= failures) throw new MissingContainer(`containers missing (attempt ${attempts})`);
    return {
      stop: async () => {
        stops++;
      },
    };
  };
  const run = () =>
    startListenerWithRetry({
      functionName: "onChange",
      start,
      retryable: (e) => e instanceof MissingContainer,
      log: (level, message) => lines.push({ level, message }),
      clock,
      random: () => 0.5, // no randomization: the increments are exactly 2^(n−1) × minimum
    });
  return { clock, lines, run, attempts: () => attempts, stops: () => stops };
}

describe("listener start retry (WebJobs FunctionListener)", () => {
  it("backs off as RandomizedExponentialBackoffStrategy: 2 s, 4 s, 6 s, 10 s, 18 s … capped at 2 min", () => {
    const next = listenerRetryDelays(2_000, 120_000, () => 0.5);
    const delays = Array.from({ length: 10 }, () => next());
    expect(delays).toEqual([2_000, 4_000, 6_000, 10_000, 18_000, 34_000, 66_000, 120_000, 120_000, 120_000]);
    // The random factor stays within ±20 % of each increment.
    const low = listenerRetryDelays(2_000, 120_000, () => 0)();
    const lowSecond = listenerRetryDelays(2_000, 120_000, () => 0);
    lowSecond();
    expect(low).toBe(2_000);
    expect(lowSecond()).toBeCloseTo(2_000 + 0.8 * 2_000);
  });

  it("logs the host's lines and keeps retrying until the listener starts; stop() then stops it", async () => {
    const h = harness(3);
    const runner = await h.run();
    expect(h.attempts()).toBe(1);
    expect(h.lines[0]).toEqual({
      level: "error",
      message:
        "The listener for function 'Functions.onChange' was unable to start. containers missing (attempt 1)",
    });
    await h.clock.advance(1_999);
    expect(h.attempts()).toBe(1);
    await h.clock.advance(1);
    expect(h.attempts()).toBe(2);
    await h.clock.advance(4_000);
    expect(h.attempts()).toBe(3);
    await h.clock.advance(6_000);
    expect(h.attempts()).toBe(4);
    expect(h.lines.map((l) => l.message)).toContain(
      "Listener successfully started for function 'Functions.onChange' after 3 retries.",
    );
    expect(h.lines.filter((l) => l.message.startsWith("Retrying to start listener"))).toHaveLength(3);
    await h.clock.advance(600_000);
    expect(h.attempts()).toBe(4);
    expect(h.stops()).toBe(0);
    await runner.stop();
    expect(h.stops()).toBe(1);
  });

  it("stop() during the backoff ends the retries without starting anything", async () => {
    const h = harness(Number.POSITIVE_INFINITY);
    const runner = await h.run();
    await h.clock.advance(2_000);
    expect(h.attempts()).toBe(2);
    await runner.stop();
    expect(h.clock.pendingTimers).toBe(0);
    await h.clock.advance(600_000);
    expect(h.attempts()).toBe(2);
    expect(h.stops()).toBe(0);
  });

  it("throws a first failure that is not retryable (e.g. bad options), as before", async () => {
    const clock = new FakeClock();
    await expect(
      startListenerWithRetry({
        functionName: "onChange",
        start: () => Promise.reject(new Error("'containerName' is required.")),
        retryable: (e) => e instanceof MissingContainer,
        log: () => {},
        clock,
      }),
    ).rejects.toThrow("'containerName' is required.");
    expect(clock.pendingTimers).toBe(0);
  });
});
