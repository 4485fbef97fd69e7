import { describe, expect, it } from "vitest";
import { LeaseContainerError } from "../../packages/changefeed/src/leases/open.js";
import { LeaseLostError } from "../../packages/changefeed/src/leases/store.js";
import {
  AlreadyExistsError,
  ConcurrencyConflictError,
  PreconditionFailedError,
} from "../../packages/core/src/cosmos/errors.js";
import { OccRetryDefaults, OccRetryPolicy } from "../../packages/core/src/cosmos/retry.js";
import { CosmosFeedError } from "../../packages/core/src/errors.js";
import {
  InvalidLockNameError,
  LockHeldError,
  LockLostError,
  StaleFencingTokenError,
} from "../../packages/locks/src/index.js";
import { WorkItemLeasedError, WorkItemLeaseLostError } from "../../packages/locks/src/workitems/index.js";

/** A policy whose sleeps are recorded instead of waited, with a fixed "random" draw. */
function recordingPolicy(maxAttempts: number, draw = 0.5) {
  const sleeps: number[] = [];
  const policy = new OccRetryPolicy({
    maxAttempts,
    baseDelayMs: 10,
    maxDelayMs: 100,
    random: () => draw,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  return { policy, sleeps };
}

describe("the shared optimistic-concurrency retry policy", () => {
  it("stops after maxAttempts lost races with the caller's error, backing off with full jitter in between", async () => {
    const { policy, sleeps } = recordingPolicy(6);
    let calls = 0;
    const run = policy.run(
      async () => {
        calls++;
        throw new PreconditionFailedError("x");
      },
      { onExhausted: (n) => new ConcurrencyConflictError("x", n) },
    );
    await expect(run).rejects.toBeInstanceOf(ConcurrencyConflictError);
    expect(calls).toBe(6);
    // draw 0.5 × min(100, 10·2^(k−1)) after each lost attempt but the last.
    expect(sleeps).toEqual([5, 10, 20, 40, 50]);
  });

  it("returns the first success and passes other errors through at once", async () => {
    const { policy, sleeps } = recordingPolicy(5);
    let calls = 0;
    expect(
      await policy.run(async () => {
        calls++;
        if (calls < 3) throw new PreconditionFailedError("x");
        return "ok";
      }),
    ).toBe("ok");
    expect(sleeps).toHaveLength(2);
    await expect(
      policy.run(async () => {
        throw new AlreadyExistsError("y");
      }),
    ).rejects.toBeInstanceOf(AlreadyExistsError);
  });

  it("stops when the signal aborts", async () => {
    const { policy } = recordingPolicy(5);
    const abort = new AbortController();
    let calls = 0;
    const run = policy.run(
      async () => {
        calls++;
        abort.abort(new Error("shutdown"));
        throw new PreconditionFailedError("x");
      },
      { signal: abort.signal },
    );
    await expect(run).rejects.toThrow("shutdown");
    expect(calls).toBe(1);
  });

  it("refuses limits that are not positive and finite", () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1.5]) {
      expect(() => new OccRetryPolicy({ maxAttempts: bad })).toThrow(RangeError);
    }
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new OccRetryPolicy({ baseDelayMs: bad })).toThrow(RangeError);
      expect(() => new OccRetryPolicy({ maxDelayMs: bad })).toThrow(RangeError);
    }
    expect(new OccRetryPolicy().maxAttempts).toBe(OccRetryDefaults.maxAttempts);
  });
});

describe("one error hierarchy", () => {
  it("lock, fencing, work-item, lease and data errors are CosmosFeedErrors with code and statusCode", () => {
    const cases: [CosmosFeedError, string, number | undefined][] = [
      [new LockHeldError("n", "h", 10), "LockHeld", 409],
      [new LockLostError("n", "expired"), "LockLost", 503],
      [new InvalidLockNameError(".", "no"), "InvalidLockName", 400],
      [new StaleFencingTokenError("d", 1, 2), "StaleFencingToken", 412],
      [new WorkItemLeasedError("w", "o", 0), "WorkItemLeased", 409],
      [new WorkItemLeaseLostError("w"), "WorkItemLeaseLost", 412],
      [new LeaseLostError("0", "stolen"), "LeaseLost", 412],
      [new LeaseContainerError("bad"), "LeaseContainer", undefined],
      [new PreconditionFailedError("d"), "PreconditionFailed", 412],
      [new ConcurrencyConflictError("d", 3), "ConcurrencyConflict", 412],
    ];
    for (const [error, code, statusCode] of cases) {
      expect(error).toBeInstanceOf(CosmosFeedError);
      expect(error).toBeInstanceOf(Error);
      expect(error.code).toBe(code);
      expect(error.statusCode).toBe(statusCode);
      expect(error.name).toBe(error.constructor.name);
    }
  });
});
