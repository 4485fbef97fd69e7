/**
 * The timing of one owned lease (renew, local deadline, close reasons) on a fake clock: a LeaseSupervisor with
 * its worker and renewer, over a scripted feed reader and a fake lease store that injects write failures (503,
 * timeouts, a steal). The real store and SDK are exercised by the integration tests; here only time is fake.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { type Lease, LeaseMode, newLease } from "../../packages/changefeed/src/leases/lease.js";
import { LeaseLostError } from "../../packages/changefeed/src/leases/store.js";
import { renewDue, resolveOptions } from "../../packages/changefeed/src/options.js";
import type { FeedPage } from "../../packages/changefeed/src/processing/feed-reader.js";
import type { ChangeFeedContext } from "../../packages/changefeed/src/processing/worker.js";
import { LeaseRenewer } from "../../packages/changefeed/src/renewer.js";
import { type LeaseClose, LeaseSupervisor } from "../../packages/changefeed/src/supervisor.js";
import { FakeClock } from "../../packages/core/src/clock.js";

const RENEW = 1_000;
const EXPIRATION = 6_000;
const MARGIN = 500;
const options = resolveOptions(
  {
    monitoredContainer: {} as Container,
    leaseContainer: {} as Container,
    instanceName: "me",
    leaseRenewInterval: RENEW,
    leaseExpirationInterval: EXPIRATION,
    leaseSafetyMargin: MARGIN,
    feedPollDelay: 100,
  },
  () => "me",
);
/** Renewal age: max(renew, expiration − 2 × renew). */
const DUE = EXPIRATION - 2 * RENEW;

type WriteFault = "ok" | "503" | "hang" | "stolen";

/** A fake lease store: records each write's (fake) time; `fault` decides what the next writes do. */
class FaultInjectingLeaseStore {
  readonly prefix = "p";
  fault: WriteFault = "ok";
  writes: number[] = [];
  failures = 0;
  constructor(private readonly clock: FakeClock) {}
  async update(cached: Lease, mutate: (l: Lease) => Lease): Promise<Lease> {
    const fault = this.fault;
    if (fault === "hang") return new Promise<Lease>(() => undefined);
    if (fault === "503") {
      this.failures++;
      throw Object.assign(new Error("injected 503"), { code: 503 });
    }
    if (fault === "stolen") return mutate({ ...cached, owner: "thief" });
    this.writes.push(this.clock.monotonicNow());
    return { ...mutate(cached), timestampMs: this.clock.now() };
  }
}

/** A feed that is always empty (no checkpoints after the first), or fails every read with `readError`. */
function idleReader(): { next(): Promise<FeedPage<unknown>> } {
  return { next: async () => ({ kind: "empty", etag: '"1"', requestCharge: 1, sessionToken: undefined }) };
}

function supervised(clock: FakeClock, store: FaultInjectingLeaseStore) {
  const lease = {
    ...newLease("p", "id", { id: "0", min: "", max: "FF" }, '"1"', LeaseMode.LatestVersion),
    owner: "me",
  };
  const contexts: ChangeFeedContext[] = [];
  const renewFailures: unknown[] = [];
  const s = new LeaseSupervisor<unknown>({
    lease,
    acquireSentAt: clock.monotonicNow(),
    me: "me",
    store,
    monitored: {} as Container,
    handler: async (_docs, ctx) => {
      contexts.push(ctx);
    },
    options,
    startPosition: { kind: "beginning" },
    clock,
    workerEvents: {
      checkpointed: () => {},
      handlerFailed: () => {},
      readFailed: () => {},
      deadLettered: () => {},
    },
    written: () => {},
    renewFailed: (_t, e) => renewFailures.push(e),
    createReader: idleReader,
  });
  let closed: LeaseClose | undefined;
  let closedAt: number | undefined;
  void s.done.then((c) => {
    closed = c;
    closedAt = clock.monotonicNow();
  });
  return { s, renewFailures, closed: () => closed, closedAt: () => closedAt };
}

describe("lease renewal and the local deadline (fake clock)", () => {
  it("renews an idle lease once it is (expiration − 2 × renew) old, and keeps it", async () => {
    const clock = new FakeClock();
    const store = new FaultInjectingLeaseStore(clock);
    const { s, closed } = supervised(clock, store);
    await clock.advance(DUE - 1);
    expect(store.writes).toEqual([]);
    await clock.advance(1);
    expect(store.writes).toEqual([DUE]);
    await clock.advance(10 * EXPIRATION);
    expect(store.writes.length).toBe(1 + Math.floor((10 * EXPIRATION) / DUE));
    expect(closed()).toBeUndefined();
    expect(s.signal.aborted).toBe(false);
    s.close("released");
    await clock.advance(1);
    expect(closed()).toEqual({ reason: "released", error: undefined });
  });

  for (const fault of ["503", "hang"] as const) {
    it(`aborts the lease's signal at (expiration − margin) after the last good write when renewals ${fault === "503" ? "fail with 503" : "time out"}`, async () => {
      const clock = new FakeClock();
      const store = new FaultInjectingLeaseStore(clock);
      const { s, closed, closedAt, renewFailures } = supervised(clock, store);
      await clock.advance(DUE); // one good renewal, sent at DUE
      expect(store.writes).toEqual([DUE]);
      store.fault = fault;
      const deadline = DUE + EXPIRATION - MARGIN;
      await clock.advance(deadline - DUE - 1);
      expect(s.signal.aborted).toBe(false);
      if (fault === "503") {
        // Retried every renew interval until the deadline, each failure reported.
        expect(store.failures).toBe(Math.ceil((deadline - 2 * DUE) / RENEW));
        expect(renewFailures.length).toBe(store.failures);
      }
      await clock.advance(1);
      expect(s.signal.aborted).toBe(true);
      expect(s.signal.reason).toBeInstanceOf(LeaseLostError);
      expect(closed()?.reason).toBe("expired");
      expect(closedAt()).toBe(deadline);
      // Before any other host may take it: the lease expires for them at DUE + EXPIRATION.
      expect(closedAt()).toBeLessThan(DUE + EXPIRATION);
    });
  }

  it("counts checkpoints as writes: the deadline moves with them and a renewal is not needed", async () => {
    const clock = new FakeClock();
    const store = new FaultInjectingLeaseStore(clock);
    const { s } = supervised(clock, store);
    await clock.advance(DUE - 100);
    await s.write((l) => l); // a checkpoint at DUE − 100
    await clock.advance(100);
    expect(store.writes).toEqual([DUE - 100]);
    await clock.advance(DUE - 100);
    expect(store.writes).toEqual([DUE - 100, 2 * DUE - 100]);
    expect(s.deadline()).toBe(2 * DUE - 100 + EXPIRATION - MARGIN);
  });

  it("is judged by the monotonic clock: a wall-clock step neither expires nor extends the lease", async () => {
    const clock = new FakeClock();
    const store = new FaultInjectingLeaseStore(clock);
    const { s } = supervised(clock, store);
    store.fault = "503";
    clock.setWallClock(clock.now() + 3_600_000);
    await clock.advance(EXPIRATION - MARGIN - 1);
    expect(s.signal.aborted).toBe(false);
    clock.setWallClock(clock.now() - 7_200_000);
    await clock.advance(1);
    expect(s.signal.aborted).toBe(true);
  });

  it("closes as stolen when a renewal finds another owner, and records only the first reason", async () => {
    const clock = new FakeClock();
    const store = new FaultInjectingLeaseStore(clock);
    const { s, closed } = supervised(clock, store);
    store.fault = "stolen";
    await clock.advance(DUE);
    expect(s.signal.aborted).toBe(true);
    s.close("expired");
    await clock.advance(1);
    expect(closed()?.reason).toBe("stolen");
  });

  it("runs renewals of different leases in parallel: a hanging write delays only its own lease", async () => {
    const clock = new FakeClock();
    const hanging = new FaultInjectingLeaseStore(clock);
    hanging.fault = "hang";
    const healthy = new FaultInjectingLeaseStore(clock);
    const a = supervised(clock, hanging);
    const b = supervised(clock, healthy);
    await clock.advance(3 * DUE);
    expect(healthy.writes).toEqual([DUE, 2 * DUE, 3 * DUE]);
    expect(b.s.signal.aborted).toBe(false);
    expect(a.s.signal.aborted).toBe(true);
    b.s.close("released");
  });
});

describe("LeaseRenewer", () => {
  it("renews at whole renew intervals, two before expiry (defaults: every 34 s, one retry before the deadline)", () => {
    expect(renewDue(17_000, 60_000)).toBe(34_000);
    expect(renewDue(200, 1_500)).toBe(1_200);
    expect(renewDue(1_000, 2_000)).toBe(1_000);
    expect(DUE).toBe(renewDue(RENEW, EXPIRATION));
  });

  it("ends as stopped when its signal fires, leaving no timer behind", async () => {
    const clock = new FakeClock();
    let last = 0;
    const renewer = new LeaseRenewer({
      leaseToken: "0",
      clock,
      renewInterval: RENEW,
      expirationInterval: EXPIRATION,
      safetyMargin: MARGIN,
      renew: async () => {
        last = clock.monotonicNow();
      },
      lastWriteSentAt: () => last,
      onRenewFailed: () => {},
    });
    const stop = new AbortController();
    const exit = renewer.run(stop.signal);
    await clock.advance(DUE);
    stop.abort();
    await expect(exit).resolves.toEqual({ kind: "stopped" });
    await clock.advance(1);
    expect(clock.pendingTimers).toBe(0);
  });
});
