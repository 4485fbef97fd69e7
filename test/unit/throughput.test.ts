import { describe, expect, it } from "vitest";
import type { CosmosError } from "../../packages/emulator/src/errors.js";
import { ThroughputBudget } from "../../packages/emulator/src/ru/throughput.js";

/** A manual clock (ms): the budget's only dependency on time. */
function clock() {
  let now = 0;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

function throttle(b: ThroughputBudget): CosmosError {
  try {
    b.admit();
  } catch (e) {
    return e as CosmosError;
  }
  throw new Error("expected a 429");
}

describe("ThroughputBudget", () => {
  it("admits while the balance is positive and throttles once overdrawn", () => {
    const c = clock();
    const b = new ThroughputBudget(100, c.now);
    b.admit();
    b.charge(60);
    b.admit();
    b.charge(60);
    const e = throttle(b);
    expect(e.status).toBe(429);
    expect(e.substatus).toBe(3200);
    // 20 RU of debt at 100 RU/s: at least 200 ms.
    expect(Number(e.headers["x-ms-retry-after-ms"])).toBeGreaterThanOrEqual(200);
    c.advance(250);
    expect(() => b.admit()).not.toThrow();
  });

  it("refills at most one second's worth", () => {
    const c = clock();
    const b = new ThroughputBudget(100, c.now);
    c.advance(10_000);
    b.charge(100);
    expect(throttle(b).status).toBe(429);
  });

  it("queues successive throttled requests further out instead of giving all the same wait", () => {
    const c = clock();
    const b = new ThroughputBudget(100, c.now);
    b.charge(150);
    const waits = [throttle(b), throttle(b), throttle(b)].map((e) =>
      Number(e.headers["x-ms-retry-after-ms"]),
    );
    expect(waits[1]).toBeGreaterThan(waits[0]);
    expect(waits[2]).toBeGreaterThan(waits[1]);
  });

  it("a raise applies at once: the extra RU/s are usable now and the debt and queued waits are forgiven", () => {
    const c = clock();
    const b = new ThroughputBudget(400, c.now);
    b.charge(1000);
    expect(throttle(b).status).toBe(429);
    b.setRate(10_000);
    expect(b.ruPerSecond).toBe(10_000);
    // 9600 RU of new headroom in the current second, no time passing.
    for (let i = 0; i < 90; i++) {
      b.admit();
      b.charge(100);
    }
    expect(() => b.admit()).not.toThrow();
  });

  it("a cut keeps the debt and caps the balance at one second of the new rate", () => {
    const c = clock();
    const b = new ThroughputBudget(1000, c.now);
    b.setRate(100);
    b.charge(150);
    // 50 RU of debt at 100 RU/s: 500 ms.
    expect(throttle(b).status).toBe(429);
    c.advance(400);
    expect(throttle(b).status).toBe(429);
    c.advance(200);
    expect(() => b.admit()).not.toThrow();
  });
});
