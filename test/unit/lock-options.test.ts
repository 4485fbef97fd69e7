import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import {
  guardWithLock,
  InvalidLockNameError,
  LockClient,
  validateLockName,
} from "../../packages/locks/src/index.js";
import { WorkItemStore } from "../../packages/locks/src/workitems/index.js";

/**
 * A container that must never be called: every check here happens before any request (a stand-in for a
 * Container, named as such; the integration tests use the real SDK against the emulator).
 */
const untouchable = new Proxy(
  {},
  {
    get(_t, prop) {
      if (prop === "id") return "untouchable";
      if (prop === "then") return undefined;
      throw new Error(`the container was used (${String(prop)}) before the options were checked`);
    },
  },
) as Container;

const BAD = [-1, 0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];

describe("lock timing knobs are validated with a RangeError", () => {
  for (const knob of ["safetyMarginMs", "clockSkewAllowanceMs", "renewIntervalMs", "ticketLifetimeMs"]) {
    it(`${knob}: negative, zero, NaN and ±Infinity are refused`, () => {
      for (const value of BAD) {
        expect(() => new LockClient({ container: untouchable, [knob]: value }), `${knob} = ${value}`).toThrow(
          RangeError,
        );
      }
    });
  }

  it("safetyMarginMs below the service's 1 s _ts granularity is refused", () => {
    expect(() => new LockClient({ container: untouchable, safetyMarginMs: 999 })).toThrow(/safetyMarginMs/);
    expect(() => new LockClient({ container: untouchable, safetyMarginMs: 1000 })).not.toThrow();
  });

  it("ttlSeconds must be whole seconds ≥ 1", () => {
    for (const value of [...BAD, 1.5]) {
      expect(() => new LockClient({ container: untouchable, ttlSeconds: value })).toThrow(RangeError);
    }
  });

  it("waitMs: negative, NaN and ±Infinity are refused before any request (0 = one attempt)", async () => {
    const locks = new LockClient({ container: untouchable });
    for (const waitMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      await expect(locks.acquire("x", { waitMs }), `waitMs = ${waitMs}`).rejects.toThrow(RangeError);
    }
  });

  it("work-item leaseDurationMs: negative, zero, NaN and ±Infinity are refused", () => {
    for (const leaseDurationMs of BAD) {
      expect(
        () => new WorkItemStore({ container: untouchable, leaseDurationMs }),
        `leaseDurationMs = ${leaseDurationMs}`,
      ).toThrow(RangeError);
    }
  });
});

describe("lock names", () => {
  it("refuses '.', '..', the queue prefix, the service's forbidden characters and over-long names", () => {
    for (const name of [
      ".",
      "..",
      "",
      "a/b",
      "a\\b",
      "a?b",
      "a#b",
      "trailing ",
      "$queue:x",
      "x".repeat(249),
    ]) {
      expect(() => validateLockName(name), JSON.stringify(name)).toThrow(InvalidLockNameError);
    }
    for (const name of ["a", "sub-1", ".a", "a..b", "x".repeat(248), "queue:x"]) {
      expect(() => validateLockName(name), name).not.toThrow();
    }
  });

  it("the HTTP guard answers 400 InvalidLockName (never throws) and runs nothing", async () => {
    const locks = new LockClient({ container: untouchable });
    for (const name of [".", "..", "a/b", ""]) {
      let ran = false;
      const response = await guardWithLock(locks, name, async () => {
        ran = true;
        return { status: 200 };
      });
      expect(response.status, name).toBe(400);
      expect((response.body as { error: { code: string } }).error.code).toBe("InvalidLockName");
      expect(ran).toBe(false);
    }
  });

  it("the HTTP guard accepts only 409 or 503 as the contention status", async () => {
    const locks = new LockClient({ container: untouchable });
    for (const contentionStatus of [200, 400, 429, 500]) {
      await expect(
        guardWithLock(locks, "x", async () => ({ status: 200 }), {
          contentionStatus: contentionStatus as 409,
        }),
      ).rejects.toThrow(RangeError);
    }
  });
});
