import { spawn } from "node:child_process";
import { getEventListeners } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AlreadyExistsError,
  ConcurrencyConflictError,
  PreconditionFailedError,
} from "../../src/shared/cosmos/errors.js";
import { createItem, readItem, removeItem, updateItem } from "../../src/shared/cosmos/occ.js";
import {
  fencedCreate,
  fencedUpdate,
  guardWithLock,
  LockClient,
  type LockHandle,
  LockHeldError,
  LockLostError,
  StaleFencingTokenError,
} from "../../src/shared/locks/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

/** Background TTL purge of the test emulator (ms): part of "TTL + sweep delay + ε". */
const SWEEP_MS = 200;
const TTL_S = 3;

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator({ ttlSweepIntervalMs: SWEEP_MS });
  db = (await t.client.databases.create({ id: uniqueName("locks") })).database;
});
afterAll(async () => {
  await t.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function lockContainer(ttlOn = true): Promise<Container> {
  const { container } = await db.containers.create({
    id: uniqueName("locks"),
    partitionKey: { paths: ["/id"], version: 2 },
    ...(ttlOn ? { defaultTtl: -1 } : {}),
  });
  return container;
}

async function dataContainer(): Promise<Container> {
  const { container } = await db.containers.create({
    id: uniqueName("data"),
    partitionKey: { paths: ["/id"], version: 2 },
  });
  return container;
}

/** Tries to acquire until it succeeds; returns the handle and when (monotonic ms). */
async function acquireWhenFree(locks: LockClient, name: string): Promise<{ lock: LockHandle; at: number }> {
  for (;;) {
    try {
      const lock = await locks.tryAcquire(name, { autoRenew: false });
      return { lock, at: performance.now() };
    } catch (e) {
      if (!(e instanceof LockHeldError)) throw e;
      await sleep(20);
    }
  }
}

describe("optimistic concurrency helpers", () => {
  it("creates (409 → AlreadyExistsError), updates with If-Match and removes conditionally", async () => {
    const c = await dataContainer();
    const doc = await createItem(c, { id: "a", n: 0 });
    await expect(createItem(c, { id: "a", n: 1 })).rejects.toBeInstanceOf(AlreadyExistsError);
    const updated = await updateItem<{ id: string; n: number }>(c, "a", "a", (d) => ({ ...d, n: d.n + 1 }));
    expect(updated.n).toBe(1);
    await expect(removeItem(c, "a", "a", doc._etag)).rejects.toBeInstanceOf(PreconditionFailedError);
    await removeItem(c, "a", "a", updated._etag);
    expect(await readItem(c, "a", "a")).toBeUndefined();
  });

  it("loses no increment under 20 concurrent updaters (each its own client)", async () => {
    const c = await dataContainer();
    await createItem(c, { id: "counter", n: 0 });
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        const mine = t.newClient().database(db.id).container(c.id);
        await updateItem<{ id: string; n: number }>(
          mine,
          "counter",
          "counter",
          (d) => ({ ...d, n: d.n + 1 }),
          {
            maxAttempts: 50,
          },
        );
      }),
    );
    expect((await readItem<{ id: string; n: number }>(c, "counter", "counter"))?.n).toBe(20);
  });

  it("gives up with ConcurrencyConflictError when every attempt loses", async () => {
    const c = await dataContainer();
    await createItem(c, { id: "hot", n: 0 });
    let sabotage = 0;
    const attempt = updateItem<{ id: string; n: number }>(
      c,
      "hot",
      "hot",
      (d) => {
        sabotage++;
        // Another writer changes the item between our read and our replace, every time.
        void c.item("hot", "hot").replace({ id: "hot", n: d.n + 100 });
        return { ...d, n: d.n + 1 };
      },
      { maxAttempts: 3 },
    );
    await expect(attempt).rejects.toBeInstanceOf(ConcurrencyConflictError);
    expect(sabotage).toBe(3);
  });
});

describe("TTL lock", () => {
  it("acquire = create; a held lock says how long until it expires; release lets the next one in", async () => {
    const c = await lockContainer();
    const a = new LockClient({ container: c, owner: "a", ttlSeconds: TTL_S });
    const b = new LockClient({ container: c, owner: "b", ttlSeconds: TTL_S });
    const held = await a.acquire("res");
    const err = await b.tryAcquire("res").catch((e) => e);
    expect(err).toBeInstanceOf(LockHeldError);
    expect((err as LockHeldError).holder).toBe("a");
    expect((err as LockHeldError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect((err as LockHeldError).retryAfterSeconds).toBeLessThanOrEqual(TTL_S + 1);
    expect(await held.release()).toBe(true);
    expect(held.signal.aborted).toBe(true);
    const next = await b.acquire("res");
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    await next.release();
  });

  it("keeps a lock alive by renewing it while work runs longer than the TTL", async () => {
    const c = await lockContainer();
    const a = new LockClient({ container: c, owner: "a", ttlSeconds: TTL_S });
    const b = new LockClient({ container: c, owner: "b", ttlSeconds: TTL_S });
    await a.withLock("long", async (signal) => {
      await sleep(TTL_S * 1000 + 1500);
      expect(signal.aborted).toBe(false);
      await expect(b.tryAcquire("long")).rejects.toBeInstanceOf(LockHeldError);
    });
    const after = await b.acquire("long");
    await after.release();
  });

  it("waits for a held lock with a bounded, jittered wait", async () => {
    const c = await lockContainer();
    const a = new LockClient({ container: c, owner: "a", ttlSeconds: TTL_S });
    const b = new LockClient({ container: c, owner: "b", ttlSeconds: TTL_S });
    const held = await a.acquire("w");
    setTimeout(() => void held.release(), 300);
    const started = performance.now();
    const got = await b.acquire("w", { waitMs: 5_000 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    await got.release();
    const again = await a.acquire("w");
    await expect(b.acquire("w", { waitMs: 200 })).rejects.toBeInstanceOf(LockHeldError);
    await again.release();
  });

  it("leaves no listener on the caller's signal after waiting", async () => {
    const c = await lockContainer();
    const held = await new LockClient({ container: c, owner: "a", ttlSeconds: TTL_S }).acquire("l");
    const shutdown = new AbortController();
    const b = new LockClient({ container: c, owner: "b", ttlSeconds: TTL_S });
    await expect(b.acquire("l", { waitMs: 700, signal: shutdown.signal })).rejects.toBeInstanceOf(
      LockHeldError,
    );
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
    await held.release();
  });

  it("signals loss before anyone else can acquire (validity window ends before the next grant)", async () => {
    const c = await lockContainer();
    const a = new LockClient({ container: c, owner: "a", ttlSeconds: TTL_S });
    const b = new LockClient({ container: c, owner: "b", ttlSeconds: TTL_S });
    const held = await a.tryAcquire("v", { autoRenew: false });
    let lostAt = 0;
    held.signal.addEventListener("abort", () => {
      lostAt = performance.now();
    });
    const { lock, at } = await acquireWhenFree(b, "v");
    expect(lostAt).toBeGreaterThan(0);
    expect(lostAt).toBeLessThan(at);
    expect(held.validUntil).toBeLessThan(at);
    expect((held.signal.reason as LockLostError).reason).toBe("expired");
    await lock.release();
  });

  it("never resurrects: after a lapse, renew and release report lost and change nothing", async () => {
    const c = await lockContainer();
    const a = new LockClient({ container: c, owner: "a", ttlSeconds: TTL_S });
    const b = new LockClient({ container: c, owner: "b", ttlSeconds: TTL_S });
    const stale = await a.tryAcquire("r", { autoRenew: false });
    const { lock: fresh } = await acquireWhenFree(b, "r");
    // The stale holder neither renews (no upsert resurrection) nor deletes the new holder's lock.
    await expect(stale.renew()).rejects.toBeInstanceOf(LockLostError);
    expect(await stale.release()).toBe(false);
    const doc = await readItem<{ id: string; owner: string }>(c, "r", "r");
    expect(doc?.owner).toBe("b");
    await fresh.release();
    // After the new holder released: the stale renew must not recreate the document.
    const stale2 = await a.tryAcquire("r2", { autoRenew: false });
    const { lock: other } = await acquireWhenFree(b, "r2");
    await other.release();
    await expect(stale2.renew()).rejects.toBeInstanceOf(LockLostError);
    expect(await readItem(c, "r2", "r2")).toBeUndefined();
  });

  it("takes over an expired lock that was never purged (TTL off), with a larger fencing token", async () => {
    const c = await lockContainer(false);
    const noTtlCheck = { ttlSeconds: TTL_S, clockSkewAllowanceMs: 200, checkContainerTtl: false };
    const a = new LockClient({ container: c, owner: "a", ...noTtlCheck });
    const b = new LockClient({ container: c, owner: "b", ...noTtlCheck });
    const first = await a.tryAcquire("t", { autoRenew: false });
    await expect(b.tryAcquire("t")).rejects.toBeInstanceOf(LockHeldError);
    const { lock: second } = await acquireWhenFree(b, "t");
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    expect((await readItem<{ owner: string }>(c, "t", "t"))?.owner).toBe("b");
    await second.release();
  });

  it("issues strictly increasing fencing tokens across releases, expiries and takeovers", async () => {
    const c = await lockContainer();
    const clients = ["a", "b", "c"].map((o) => new LockClient({ container: c, owner: o, ttlSeconds: TTL_S }));
    const tokens: number[] = [];
    for (let i = 0; i < 9; i++) {
      const l = await clients[i % 3].acquire("f", { waitMs: 10_000, autoRenew: false });
      tokens.push(l.fencingToken);
      // Unrelated writes in between must not matter.
      await c.items.create({ id: `noise-${i}` });
      if (i % 4 === 3) continue; // left to expire
      await l.release();
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  }, 60_000);

  it("lets a crashed holder's lock be acquired within TTL + sweep delay + ε (kill -9 of a real process)", async () => {
    const c = await lockContainer();
    const script = fileURLToPath(new URL("../support/lock-holder-child.ts", import.meta.url));
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        script,
        JSON.stringify({
          endpoint: t.emulator.endpoint,
          key: t.emulator.key,
          database: db.id,
          container: c.id,
          name: "crash",
          ttlSeconds: TTL_S,
        }),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise((r) => child.once("exit", r));
    const line = await new Promise<string>((resolve) =>
      createInterface({ input: child.stdout as NonNullable<typeof child.stdout> }).once("line", resolve),
    );
    const childToken = (JSON.parse(line) as { token: number }).token;
    // Let it renew at least once, then kill it without any chance to release.
    await sleep(1_200);
    child.kill("SIGKILL");
    const killedAt = performance.now();
    await exited;
    const b = new LockClient({ container: c, owner: "b", ttlSeconds: TTL_S });
    const { lock, at } = await acquireWhenFree(b, "crash");
    const waited = at - killedAt;
    expect(waited).toBeLessThanOrEqual(TTL_S * 1000 + SWEEP_MS + 1_500);
    expect(lock.fencingToken).toBeGreaterThan(childToken);
    await lock.release();
  });

  it("no two holders' validity windows overlap under contention with holders paused past the TTL", async () => {
    const c = await lockContainer();
    const windows: { owner: string; from: number; to: number }[] = [];
    const deadline = performance.now() + 12_000;
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    await Promise.all(
      Array.from({ length: 5 }, async (_, w) => {
        const locks = new LockClient({
          container: t.newClient().database(db.id).container(c.id),
          owner: `w${w}`,
          ttlSeconds: TTL_S,
        });
        while (performance.now() < deadline) {
          let lock: LockHandle;
          try {
            lock = await locks.acquire("contended", { waitMs: 2_000, autoRenew: false });
          } catch (e) {
            if (e instanceof LockHeldError) continue;
            throw e;
          }
          const from = performance.now();
          let to = Number.POSITIVE_INFINITY;
          lock.signal.addEventListener("abort", () => {
            to = Math.min(to, performance.now());
          });
          // Some holders "pause" longer than the TTL (no renewals); others work briefly and release.
          await sleep(rand() < 0.3 ? TTL_S * 1000 + 500 : 20 + rand() * 100);
          to = Math.min(to, performance.now());
          windows.push({ owner: `w${w}`, from, to });
          await lock.release();
        }
      }),
    );
    windows.sort((x, y) => x.from - y.from);
    expect(windows.length).toBeGreaterThan(10);
    for (let i = 1; i < windows.length; i++) {
      expect(
        windows[i].from,
        `${windows[i - 1].owner} and ${windows[i].owner} overlap`,
      ).toBeGreaterThanOrEqual(windows[i - 1].to);
    }
  }, 60_000);
});

describe("fenced writes", () => {
  /**
   * K workers × M increments of one counter under a lock. Each increment: acquire (no auto-renew), read the
   * counter, sometimes pause past the TTL (as a GC or VM freeze would), then write value + 1.
   */
  async function counterWorkload(
    fenced: boolean,
  ): Promise<{ value: number; increments: number; stale: number }> {
    const locksC = await lockContainer();
    const data = await dataContainer();
    await fencedCreate(data, { id: "counter", value: 0 }, 0);
    const K = 4;
    const M = 4;
    let stale = 0;
    let increments = 0;
    let seed = fenced ? 11 : 13;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    await Promise.all(
      Array.from({ length: K }, async (_, w) => {
        const client = t.newClient();
        const locks = new LockClient({
          container: client.database(db.id).container(locksC.id),
          owner: `w${w}`,
          ttlSeconds: TTL_S,
        });
        const counter = client.database(db.id).container(data.id);
        let done = 0;
        let paused = false;
        while (done < M) {
          const lock = await locks.acquire("counter", { waitMs: 30_000, autoRenew: false });
          const read = (await readItem<{ id: string; value: number }>(counter, "counter", "counter")) as {
            id: string;
            value: number;
          };
          if (!paused && rand() < 0.5) {
            paused = true;
            await sleep(TTL_S * 1000 + 500);
          }
          try {
            if (fenced) {
              await fencedUpdate<{ id: string; value: number }>(
                counter,
                "counter",
                "counter",
                lock,
                (cur) => ({
                  ...cur,
                  value: cur.value + 1,
                }),
              );
            } else {
              // Trusting the lock: a blind write of what was read.
              await counter.item("counter", "counter").replace({ id: "counter", value: read.value + 1 });
            }
            done++;
            increments++;
          } catch (e) {
            // Refused: the document saw a newer token, or the lock lapsed between the read and the write.
            if (!(e instanceof StaleFencingTokenError) && !(e instanceof LockLostError)) throw e;
            stale++;
          } finally {
            await lock.release();
          }
        }
      }),
    );
    const final = (await readItem<{ value: number }>(data, "counter", "counter"))?.value ?? -1;
    return { value: final, increments, stale };
  }

  it("ends at exactly K×M with fencing, and rejects the paused holders' stale writes", async () => {
    const r = await counterWorkload(true);
    expect(r.increments).toBe(16);
    expect(r.value).toBe(16);
    expect(r.stale).toBeGreaterThan(0);
  }, 90_000);

  it("negative control: the same workload without fencing loses updates", async () => {
    const r = await counterWorkload(false);
    expect(r.increments).toBe(16);
    expect(r.value).toBeLessThan(16);
  }, 90_000);
});

describe("HTTP lock guard", () => {
  it("answers 409 + Retry-After (or 503 LockContention) when the lock is held", async () => {
    const c = await lockContainer();
    const holder = await new LockClient({ container: c, owner: "h", ttlSeconds: TTL_S }).acquire("sub-1");
    const locks = new LockClient({ container: c, owner: "req", ttlSeconds: TTL_S });
    let ran = false;
    const conflict = await guardWithLock(locks, "sub-1", async () => {
      ran = true;
      return { status: 201 };
    });
    expect(ran).toBe(false);
    expect(conflict.status).toBe(409);
    expect(Number(conflict.headers?.["Retry-After"])).toBeGreaterThanOrEqual(1);
    const unavailable = await guardWithLock(locks, "sub-1", async () => ({ status: 201 }), {
      contentionStatus: 503,
    });
    expect(unavailable.status).toBe(503);
    expect((unavailable.body as { error: { code: string } }).error.code).toBe("LockContention");
    await holder.release();
    const ok = await guardWithLock(locks, "sub-1", async () => ({ status: 201, body: { ok: true } }));
    expect(ok.status).toBe(201);
    expect(await readItem(c, "sub-1", "sub-1")).toBeUndefined();
  });

  it("aborts the request's signal when the lock is lost mid-request and writes nothing more", async () => {
    const c = await lockContainer();
    const data = await dataContainer();
    const locks = new LockClient({ container: c, owner: "req", ttlSeconds: TTL_S });
    const response = await guardWithLock(locks, "sub-2", async (signal) => {
      await createItem(data, { id: "first" });
      // Someone deletes the lock document (an operator, or a bug elsewhere): the next renewal finds it gone.
      const doc = await readItem<{ id: string }>(c, "sub-2", "sub-2");
      await c
        .item("sub-2", "sub-2")
        .delete({ accessCondition: { type: "IfMatch", condition: doc?._etag as string } });
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      if (!signal.aborted) await createItem(data, { id: "second" });
      return { status: 201 };
    });
    expect(response.status).toBe(503);
    expect((response.body as { error: { code: string } }).error.code).toBe("LockLost");
    expect(await readItem(data, "second", "second")).toBeUndefined();
  });
});
