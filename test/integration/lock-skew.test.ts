/**
 * Taking over an expired-but-unpurged lock must not depend on two machines' clocks agreeing: two hosts on
 * FakeClocks whose wall clocks are skewed against each other and against the service (the embedded emulator,
 * real `_ts`), over a TTL-off container so nothing is purged and only the takeover path can free the lock. At
 * every step the taker must not hold the lock while the holder still believes it holds it, and fencing tokens
 * grow. Time is fake for both hosts; the emulator is real.
 */
import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../packages/core/src/clock.js";
import { LockClient, type LockHandle, LockHeldError } from "../../packages/locks/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

const TTL_S = 10;
const STEP_MS = 100;

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("lockskew") })).database;
});
afterAll(async () => {
  await t.close();
});

async function ttlOffContainer(): Promise<Container> {
  const { container } = await db.containers.create({
    id: uniqueName("locks"),
    partitionKey: { paths: ["/id"], version: 2 },
  });
  return container;
}

/** One attempt by the taker; the handle, or undefined while held. */
async function tryTake(taker: LockClient, name: string): Promise<LockHandle | undefined> {
  try {
    return await taker.tryAcquire(name, { autoRenew: false });
  } catch (e) {
    if (e instanceof LockHeldError) return undefined;
    throw e;
  }
}

function hosts(container: Container, takerSkewMs: number) {
  const holderClock = new FakeClock(Date.now());
  const takerClock = new FakeClock(Date.now() + takerSkewMs);
  const common = { container, ttlSeconds: TTL_S, checkContainerTtl: false };
  const holder = new LockClient({ ...common, owner: "holder", clock: holderClock });
  const taker = new LockClient({ ...common, owner: "taker", clock: takerClock });
  const advance = async (ms: number) => {
    await holderClock.advance(ms);
    await takerClock.advance(ms);
  };
  return { holderClock, takerClock, holder, taker, advance };
}

describe("lock takeover with skewed clocks (fake clocks, real emulator)", () => {
  for (const skewMs of [2_500, 60_000]) {
    it(`a taker whose clock runs ${skewMs / 1000} s fast takes the lock only after the holder stopped believing it holds it`, async () => {
      const c = await ttlOffContainer();
      const h = hosts(c, skewMs);
      const held = await h.holder.tryAcquire("s", { autoRenew: false });
      let taken: LockHandle | undefined;
      let elapsed = 0;
      while (!taken && elapsed <= 3 * TTL_S * 1000) {
        taken = await tryTake(h.taker, "s");
        if (taken) break;
        await h.advance(STEP_MS);
        elapsed += STEP_MS;
      }
      expect(taken).toBeDefined();
      // At the moment of the takeover the holder's own window was closed, by its own clock.
      expect(held.signal.aborted).toBe(true);
      expect(() => held.assertHeld()).toThrow();
      // The takeover waits a whole TTL (+ the allowance) of seeing the document unchanged, on the taker's clock.
      expect(elapsed).toBeGreaterThanOrEqual(TTL_S * 1000);
      expect(taken?.fencingToken).toBeGreaterThan(held.fencingToken);
      await taken?.release();
    });
  }

  it("a renewal is a new version: the taker's count starts again, and it never takes a renewed lock early", async () => {
    const c = await ttlOffContainer();
    const h = hosts(c, 60_000);
    const held = await h.holder.tryAcquire("r", { autoRenew: false });
    expect(await tryTake(h.taker, "r")).toBeUndefined(); // first sighting of version 1
    await h.advance(5_000);
    await held.renew(); // version 2: the holder's window now runs until 5 s + ttl − margin
    let taken: LockHandle | undefined;
    let elapsed = 5_000;
    while (!taken && elapsed <= 4 * TTL_S * 1000) {
      taken = await tryTake(h.taker, "r");
      if (taken) break;
      await h.advance(STEP_MS);
      elapsed += STEP_MS;
    }
    expect(taken).toBeDefined();
    expect(held.signal.aborted).toBe(true);
    // Seen first at 5 s + one step at the earliest, so taken no earlier than a TTL after that.
    expect(elapsed).toBeGreaterThanOrEqual(5_000 + TTL_S * 1000);
    expect(taken?.fencingToken).toBeGreaterThan(held.fencingToken);
  });
});
