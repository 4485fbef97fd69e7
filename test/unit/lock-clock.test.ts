import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { type Clock, FakeClock } from "../../packages/core/src/clock.js";
import type { Stored } from "../../packages/core/src/cosmos/occ.js";
import { type LockDocument, LockHandle, LockLostError } from "../../packages/locks/src/index.js";

/** Never called: the deadline logic must decide without a request (a stand-in, named as such). */
const untouchable = new Proxy(
  {},
  {
    get(_t, prop) {
      throw new Error(`the container was used (${String(prop)})`);
    },
  },
) as Container;

const doc = {
  id: "n",
  owner: "me",
  ttl: 10,
  acquiredAt: "2026-01-01T00:00:00.000Z",
  _etag: '"1"',
  _ts: 1,
  _rid: "r",
  _self: "s",
} as Stored<LockDocument>;

function handle(clock: Clock): LockHandle {
  const ctx = {
    container: untouchable,
    ttlSeconds: 10,
    safetyMarginMs: 1_500,
    renewIntervalMs: 3_000,
    clock,
  };
  return new LockHandle(ctx, "n", 42, doc, clock.monotonicNow(), false);
}

describe("lock deadline on the injected fake clock", () => {
  it("the signal fires at send time + ttl − safety margin, not before", async () => {
    const clock = new FakeClock();
    const lock = handle(clock);
    expect(lock.validUntil).toBe(10_000 - 1_500);
    await clock.advance(8_499);
    expect(lock.signal.aborted).toBe(false);
    expect(() => lock.assertHeld()).not.toThrow();
    await clock.advance(1);
    expect(lock.signal.aborted).toBe(true);
    expect((lock.signal.reason as LockLostError).reason).toBe("expired");
    expect(clock.pendingTimers).toBe(0);
  });

  it("after a pause past the deadline, before the deadline timer ran, assertHeld and renew report the loss and send nothing", async () => {
    const fake = new FakeClock();
    // A process pause: the clock moves on, but no timer of this process has had a chance to run.
    let paused = 0;
    const clock: Clock = {
      now: () => fake.now() + paused,
      monotonicNow: () => fake.monotonicNow() + paused,
      sleep: (ms, signal) => fake.sleep(ms, signal),
    };
    const lock = handle(clock);
    paused = 9_000;
    expect(lock.signal.aborted).toBe(false); // the deadline timer has not run
    expect(() => lock.assertHeld()).toThrow(LockLostError);
    expect(lock.signal.aborted).toBe(true);
    const lost = await lock.renew().catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(LockLostError);
    expect((lost as LockLostError).reason).toBe("expired");
  });
});
