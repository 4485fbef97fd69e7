import type { Container, Database, RequestContext } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { epkWindows } from "../../bench/fleet/estimator-run.js";
import { until } from "../../bench/lib/until.js";
import { RequestTimeoutError } from "../../packages/changefeed/src/bounded-request.js";
import { LeaseLagReadError } from "../../packages/changefeed/src/estimate-retry.js";
import {
  type EstimatorBounds,
  type EstimatorOptions,
  estimateLag,
  estimateLagSettled,
} from "../../packages/changefeed/src/estimator.js";
import { ChangeFeedDefaults } from "../../packages/changefeed/src/options.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { meterDelta, RANGE_COUNT_HEADER } from "../../packages/emulator/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { faultPlugins, serviceError } from "../support/faults.js";

/*
 * One lease's feed read times out or is throttled (issue 35: one read of 10,000 timed out and failed the whole
 * estimate): the real SDK reads the real emulator over its socket; a request plugin makes only that lease's read
 * hang (the emulator answered, the answer never arrives) or answer 429 (as after the SDK's own retries: they are
 * off in this client; its change feed iterator keeps only the error's code and headers, so the retry-after is the
 * header's). The estimator's waits run on a FakeClock, advanced only when every other request has
 * answered, so nothing here depends on how fast this machine is.
 */

const LEASES = 6;
/** The lease whose reads fail: a window in the middle of the range (its start EPK is sent as x-ms-start-epk). */
const TARGET = 2;

let t: TestEmulator;
let db: Database;
let monitored: Container;
let leaseContainer: Container;
let windows: { min: string; max: string }[];
/** Each lease's lag estimated with no fault: what a faulted estimate must still report. */
let expected: Map<string, number>;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("lagretry") })).database;
  ({ container: monitored } = await db.containers.create(
    { id: "monitored", partitionKey: { paths: ["/pk"], version: 2 } },
    { initialHeaders: { [RANGE_COUNT_HEADER]: "1" } },
  ));
  ({ container: leaseContainer } = await db.containers.create({
    id: "leases",
    partitionKey: { paths: ["/id"] },
  }));
  for (let i = 0; i < 20; i++) await monitored.items.create({ id: `d${i}`, pk: `k${i}` });
  const dbRid = (await db.read()).resource?._rid;
  const rid = (await monitored.read()).resource?._rid;
  const prefix = `${new URL(t.emulator.endpoint).hostname}_${dbRid}_${rid}`;
  windows = epkWindows("", "FF", LEASES);
  for (const w of windows)
    await leaseContainer.items.create({
      id: `${prefix}..${w.min}-${w.max}`,
      version: 1,
      LeaseToken: `${w.min}-${w.max}`,
      FeedRange: { Range: { min: w.min, max: w.max, isMinInclusive: true, isMaxInclusive: false } },
      Owner: "host",
      ContinuationToken: '"1"',
      properties: {},
      timestamp: new Date().toISOString(),
      Mode: "LatestVersion",
    });
  const clean = await estimateLag({ monitoredContainer: monitored, leaseContainer });
  expected = new Map(clean.map((l) => [l.leaseToken, l.estimatedLag]));
});
afterAll(async () => {
  await t.close();
});

const targetToken = () => `${windows[TARGET].min}-${windows[TARGET].max}`;
const isFeedRead = (c: RequestContext) => c.resourceType === "docs" && c.headers?.["A-IM"] !== undefined;
const isTargetRead = (c: RequestContext) =>
  isFeedRead(c) && c.headers?.["x-ms-start-epk"] === windows[TARGET].min;

/**
 * A client of its own whose target lease's reads fail as `fault` says (attempt 1, 2, …; undefined: sent as is),
 * counting every feed read and the requests not yet answered.
 */
function faulty(fault: (attempt: number) => "hang" | "429" | undefined) {
  const net = { inFlight: 0, feedReads: 0, targetAttempts: 0 };
  const client = t.newClient({
    ...faultPlugins({
      match: () => true,
      run: async (c, next) => {
        if (isFeedRead(c)) net.feedReads++;
        const what = isTargetRead(c) ? fault(++net.targetAttempts) : undefined;
        // As the SDK's RequestHandler makes a 429: the header, and retryAfterInMs from it.
        if (what === "429")
          throw Object.assign(serviceError(429), {
            headers: { "x-ms-retry-after-ms": "5000" },
            retryAfterInMs: 5_000,
          });
        net.inFlight++;
        try {
          const answer = await next();
          // The emulator answered; in a hang, the answer never comes back.
          return what === "hang" ? new Promise(() => undefined) : answer;
        } finally {
          net.inFlight--;
        }
      },
    }),
    connectionPolicy: {
      retryOptions: { maxRetryAttemptCount: 0, fixedRetryIntervalInMilliseconds: 0, maxWaitTimeInSeconds: 0 },
    },
  });
  const d = client.database(db.id);
  const options: EstimatorOptions & EstimatorBounds = {
    monitoredContainer: d.container("monitored"),
    leaseContainer: d.container("leases"),
  };
  return { net, options };
}

/** Every request answered and only `timers` waits left on the clock (the hung read's bound, a backoff). */
async function quiet(
  clock: FakeClock,
  net: { inFlight: number; feedReads: number },
  timers: number,
): Promise<void> {
  await until(
    "the other leases' reads answered",
    () => net.feedReads >= LEASES && net.inFlight === 0 && clock.pendingTimers === timers,
    { everyMs: 5 },
  );
}

const feedReadsMetered = (before: ReturnType<typeof t.emulator.meter.snapshot>) =>
  meterDelta(before, t.emulator.meter.snapshot(), `${db.id}/monitored`).changeFeed?.count ?? 0;

describe("estimateLag when one lease's feed read fails", () => {
  it("a read that never answers is given up after requestTimeout and sent again: the estimate succeeds", async () => {
    const clock = new FakeClock();
    const { net, options } = faulty((attempt) => (attempt === 1 ? "hang" : undefined));
    const before = t.emulator.meter.snapshot();
    const lags = estimateLag({ ...options, clock });
    await quiet(clock, net, 1); // only the hung read's requestTimeout is left
    expect(net.targetAttempts).toBe(1);
    await clock.advance(ChangeFeedDefaults.requestTimeout); // given up: its backoff starts
    await clock.advance(ChangeFeedDefaults.feedReadRetryInitialDelay); // the second attempt is sent
    const result = await lags;
    expect(new Map(result.map((l) => [l.leaseToken, l.estimatedLag]))).toEqual(expected);
    expect(net.targetAttempts).toBe(2);
    expect(net.feedReads).toBe(LEASES + 1);
    expect(feedReadsMetered(before)).toBe(LEASES + 1); // the hung read reached the emulator too
  });

  it("a 429 is retried after the wait it asks for: the estimate succeeds", async () => {
    const clock = new FakeClock();
    const { net, options } = faulty((attempt) => (attempt === 1 ? "429" : undefined));
    const before = t.emulator.meter.snapshot();
    const lags = estimateLag({ ...options, clock });
    await quiet(clock, net, 1); // only the backoff is left
    await clock.advance(4_999);
    expect(net.targetAttempts).toBe(1); // the 429's retry-after (5,000 ms) is longer than the backoff
    await clock.advance(1);
    const result = await lags;
    expect(new Map(result.map((l) => [l.leaseToken, l.estimatedLag]))).toEqual(expected);
    expect(net.targetAttempts).toBe(2);
    expect(net.feedReads).toBe(LEASES + 1);
    expect(feedReadsMetered(before)).toBe(LEASES); // the 429 never reached the emulator
  });

  it("past readRetries the lease fails: estimateLag with a LeaseLagReadError naming it, estimateLagSettled beside the others", async () => {
    const readRetries = 2;
    /** Drives the clock through each backoff (every one within feedReadRetryMaxDelay) until `done` settles. */
    const drive = async (
      clock: FakeClock,
      net: { inFlight: number; feedReads: number },
      done: { settled: boolean },
    ) => {
      for (;;) {
        await until(
          "a backoff or the end",
          () => done.settled || (net.feedReads >= LEASES && net.inFlight === 0 && clock.pendingTimers === 1),
          {
            everyMs: 5,
          },
        );
        if (done.settled) return;
        await clock.advance(ChangeFeedDefaults.feedReadRetryMaxDelay);
      }
    };
    const track = <T>(p: Promise<T>) => {
      const s = { settled: false, value: undefined as T | undefined, error: undefined as unknown };
      p.then(
        (v) => Object.assign(s, { settled: true, value: v }),
        (e) => Object.assign(s, { settled: true, error: e }),
      );
      return s;
    };

    const failing = faulty(() => "429");
    const clock = new FakeClock();
    const whole = track(estimateLag({ ...failing.options, clock, readRetries }));
    await drive(clock, failing.net, whole);
    expect(whole.error).toBeInstanceOf(LeaseLagReadError);
    const e = whole.error as LeaseLagReadError;
    expect([e.leaseToken, e.attempts, e.statusCode]).toEqual([targetToken(), readRetries + 1, 429]);
    expect(e.message).toContain(targetToken());
    expect(failing.net.targetAttempts).toBe(readRetries + 1);

    const again = faulty(() => "429");
    const settledClock = new FakeClock();
    const before = t.emulator.meter.snapshot();
    const settled = track(estimateLagSettled({ ...again.options, clock: settledClock, readRetries }));
    await drive(settledClock, again.net, settled);
    expect(settled.error).toBeUndefined();
    const estimate = settled.value;
    expect(estimate?.failed.map((f) => [f.leaseToken, f.owner])).toEqual([[targetToken(), "host"]]);
    expect(estimate?.failed[0].error).toBeInstanceOf(LeaseLagReadError);
    const others = new Map(expected);
    others.delete(targetToken());
    expect(new Map(estimate?.lags.map((l) => [l.leaseToken, l.estimatedLag]))).toEqual(others);
    expect(again.net.targetAttempts).toBe(readRetries + 1);
    expect(again.net.feedReads).toBe(LEASES - 1 + readRetries + 1);
    expect(feedReadsMetered(before)).toBe(LEASES - 1);
  });

  it("a hung read past readRetries fails with the timeouts as its cause", async () => {
    const clock = new FakeClock();
    const { net, options } = faulty(() => "hang");
    let error: unknown;
    const whole = estimateLag({ ...options, clock, readRetries: 0 }).catch((e: unknown) => {
      error = e;
    });
    await quiet(clock, net, 1);
    await clock.advance(ChangeFeedDefaults.requestTimeout);
    await whole;
    expect(error).toBeInstanceOf(LeaseLagReadError);
    expect((error as LeaseLagReadError).cause).toBeInstanceOf(RequestTimeoutError);
    expect([(error as LeaseLagReadError).attempts, (error as LeaseLagReadError).statusCode]).toEqual([
      1, 408,
    ]);
    expect(net.targetAttempts).toBe(1);
  });
});
