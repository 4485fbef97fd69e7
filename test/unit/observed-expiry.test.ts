import { describe, expect, it } from "vitest";
import { FakeClock } from "../../packages/core/src/clock.js";
import { LockHeldError } from "../../packages/locks/src/errors.js";
import { ObservedLockExpiry } from "../../packages/locks/src/observed-expiry.js";

// The taker's count of how long a lock version has stood unchanged, on its own monotonic clock.
describe("ObservedLockExpiry", () => {
  it("gives exactly the TTL + allowance at the first sighting, whatever the clock's fraction (no extra second)", () => {
    // performance.now() has fractions: at this one, (t + 4000) − t is 4000.0000000000073 in floating point, which a
    // Retry-After rounded up to seconds turned into 5 s for a 3 s TTL (a CI failure of locks.test.ts).
    const t = 65097.112144475155;
    const clock = { now: () => 0, monotonicNow: () => t, sleep: async () => {} };
    const expiry = new ObservedLockExpiry(clock, 1_000);
    const remaining = expiry.remainingMs("res", '"e1"', 3);
    expect(remaining).toBe(4_000);
    expect(new LockHeldError("res", "a", remaining).retryAfterSeconds).toBe(4);
  });

  it("counts down while the version stays, restarts on a new one, and reaches 0 past the window", async () => {
    const clock = new FakeClock();
    const expiry = new ObservedLockExpiry(clock, 1_000);
    expect(expiry.remainingMs("res", '"e1"', 3)).toBe(4_000);
    await clock.advance(2_500);
    expect(expiry.remainingMs("res", '"e1"', 3)).toBe(1_500);
    expect(expiry.remainingMs("res", '"e2"', 3)).toBe(4_000); // a renewal: a new etag, the count starts again
    await clock.advance(4_000);
    expect(expiry.remainingMs("res", '"e2"', 3)).toBe(0);
    expiry.forget("res");
    expect(expiry.remainingMs("res", '"e2"', 3)).toBe(4_000);
  });
});
