import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import type { Stored } from "../../src/shared/cosmos/occ.js";
import {
  type LockClock,
  type LockDocument,
  LockHandle,
  LockLostError,
} from "../../src/shared/locks/index.js";

/** A fake clock (deterministic): time moves only when the test says so; due timers run on `advance`. */
class FakeClock implements LockClock {
  private t = 1_000;
  private timers: { at: number; callback: () => void; id: number }[] = [];
  private nextId = 0;
  now(): number {
    return this.t;
  }
  wallNow(): number {
    return 1_700_000_000_000 + this.t;
  }
  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.t + ms, callback, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== handle);
  }
  /** Moves time forward, running every timer that falls due. */
  advance(ms: number): void {
    const until = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = due.at;
      due.callback();
    }
    this.t = until;
  }
  /** Moves time forward without running any timer: a process that was paused (GC, SIGSTOP, VM freeze). */
  pause(ms: number): void {
    this.t += ms;
  }
}

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

function handle(clock: FakeClock): LockHandle {
  const ctx = {
    container: untouchable,
    ttlSeconds: 10,
    safetyMarginMs: 1_500,
    renewIntervalMs: 3_000,
    clock,
  };
  return new LockHandle(ctx, "n", 42, doc, clock.now(), false);
}

describe("lock deadline on an injected clock", () => {
  it("the signal fires at send time + ttl − safety margin, not before", () => {
    const clock = new FakeClock();
    const lock = handle(clock);
    expect(lock.validUntil).toBe(1_000 + 10_000 - 1_500);
    clock.advance(8_499);
    expect(lock.signal.aborted).toBe(false);
    expect(() => lock.assertHeld()).not.toThrow();
    clock.advance(1);
    expect(lock.signal.aborted).toBe(true);
    expect((lock.signal.reason as LockLostError).reason).toBe("expired");
  });

  it("after a pause past the deadline, before the deadline timer ran, assertHeld and renew report the loss and send nothing", async () => {
    const clock = new FakeClock();
    const lock = handle(clock);
    clock.pause(9_000);
    expect(lock.signal.aborted).toBe(false); // the timer has not run
    expect(() => lock.assertHeld()).toThrow(LockLostError);
    expect(lock.signal.aborted).toBe(true);
    const lost = await lock.renew().catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(LockLostError);
    expect((lost as LockLostError).reason).toBe("expired");
  });
});
