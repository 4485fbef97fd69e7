import { spawn } from "node:child_process";
import { getEventListeners } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WAIT_MS, waitUntil } from "../../bench/lib/until.js";
import {
  AlreadyExistsError,
  ConcurrencyConflictError,
  PreconditionFailedError,
} from "../../packages/core/src/cosmos/errors.js";
import { createItem, readItem, removeItem, updateItem } from "../../packages/core/src/cosmos/occ.js";
import {
  fencedCreate,
  fencedRead,
  fencedUpdate,
  guardWithLock,
  LockClient,
  LockContainerError,
  type LockHandle,
  LockHeldError,
  LockLostError,
  StaleFencingTokenError,
} from "../../packages/locks/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { faultPlugins, serviceError } from "../support/faults.js";

/** Background TTL purge of the test emulator (ms). */
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

  it("starts from a document the caller just read (one request fewer) and reads afresh when it lost the race", async () => {
    const c = await dataContainer();
    const seen: string[] = [];
    const counting = t.newClient(
      faultPlugins({
        match: (ctx) => {
          if (ctx.resourceType === "docs") seen.push(`${ctx.method} ${ctx.operationType}`);
          return false;
        },
        run: (_ctx, next) => next(),
      }),
    );
    const mine = counting.database(db.id).container(c.id);
    const created = await createItem(c, { id: "k", n: 0 });
    seen.length = 0;
    const one = await updateItem<{ id: string; n: number }>(mine, "k", "k", (d) => ({ ...d, n: d.n + 1 }), {
      current: created,
    });
    expect(one.n).toBe(1);
    expect(seen).toEqual(["PUT replace"]);
    // `created` is stale now: the replace is refused (412), then the item is read and the change applied to it.
    seen.length = 0;
    const two = await updateItem<{ id: string; n: number }>(mine, "k", "k", (d) => ({ ...d, n: d.n + 10 }), {
      current: created,
    });
    expect(two.n).toBe(11);
    expect(seen).toEqual(["PUT replace", "GET read", "PUT replace"]);
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
    // Renewals every 250 ms: a renewal may come 1.25 s late (a loaded machine) before the 1.5 s validity window
    // closes; at the default third of the TTL it could be only 0.5 s late.
    const a = new LockClient({ container: c, owner: "a", ttlSeconds: TTL_S, renewIntervalMs: 250 });
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
    let releasing = false;
    setTimeout(() => {
      releasing = true;
      void held.release();
    }, 300);
    const got = await b.acquire("w", { waitMs: WAIT_MS });
    // b got the lock by waiting for a's release (a renews: the lock would not have lapsed meanwhile).
    expect(releasing).toBe(true);
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
  });

  it("lets a crashed holder's lock be acquired once it lapsed, with a larger fencing token (kill -9 of a real process)", async () => {
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
    const firstWrite = (await readItem<{ _etag: string }>(c, "crash", "crash"))?._etag;
    await waitUntil(
      "the child's renewal",
      async () => (await readItem(c, "crash", "crash"))?._etag !== firstWrite,
    );
    child.kill("SIGKILL");
    await exited;
    // Its last write: the lock lapses TTL seconds after it (the emulator's _ts, whole seconds).
    const last = (await readItem<{ _ts: number }>(c, "crash", "crash")) as { _ts: number };
    const b = new LockClient({ container: c, owner: "b", ttlSeconds: TTL_S });
    const { lock } = await acquireWhenFree(b, "crash");
    expect(Date.now()).toBeGreaterThanOrEqual((last._ts + TTL_S) * 1000);
    expect(lock.fencingToken).toBeGreaterThan(childToken);
    await lock.release();
    // How soon after the kill the lock is free again (TTL + the purge's delay) is measured by bench/locks.bench.ts
    // (the "crash" scenario in bench/results/locks.json), not judged here.
  });

  it("no two holders' validity windows overlap under contention with holders paused past the TTL", async () => {
    const c = await lockContainer();
    const windows: { owner: string; from: number; to: number }[] = [];
    // A number of holds, not a duration: a slower machine takes longer, not fewer.
    const HOLDS = 12;
    let started = 0;
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
        while (started < HOLDS) {
          let lock: LockHandle;
          try {
            lock = await locks.acquire("contended", { waitMs: 2_000, autoRenew: false });
          } catch (e) {
            if (e instanceof LockHeldError) continue;
            throw e;
          }
          started++;
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
    expect(windows.length).toBeGreaterThanOrEqual(HOLDS);
    for (let i = 1; i < windows.length; i++) {
      expect(
        windows[i].from,
        `${windows[i - 1].owner} and ${windows[i].owner} overlap`,
      ).toBeGreaterThanOrEqual(windows[i - 1].to);
    }
  });
});

describe("fenced writes", () => {
  /**
   * K workers × M increments of one counter under a lock. Each increment: acquire (no auto-renew), read the
   * counter, sometimes pause (as a GC or VM freeze would) until another worker has read the counter — it took
   * the lock after this one's lapsed — then write value + 1. The pause ends on that event, not after a fixed
   * time, so the stale write comes after another holder's read however slow the machine is.
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
    let finished = 0;
    let reads = 0;
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
          const myRead = ++reads;
          // Only while another worker can still take the lock: the last one would wait for nobody.
          if (!paused && rand() < 0.5 && finished < K - 1) {
            paused = true;
            await waitUntil("another worker's read", () => reads > myRead || finished === K - 1);
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
        finished++;
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
  });

  it("negative control: the same workload without fencing loses updates", async () => {
    const r = await counterWorkload(false);
    expect(r.increments).toBe(16);
    expect(r.value).toBeLessThan(16);
  });
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

/** Blocks this whole process (timers, sockets, the in-process emulator) for `ms`, as a GC pause would. */
function freezeProcess(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, ms));
}

/** Lines a child prints, one JSON object each. */
function jsonLines(stream: NodeJS.ReadableStream): () => Promise<Record<string, unknown>> {
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: stream }).on("line", (line) => {
    const w = waiting.shift();
    if (w) w(line);
    else queue.push(line);
  });
  return () =>
    new Promise((resolve) => {
      const take = (line: string) => resolve(JSON.parse(line) as Record<string, unknown>);
      const q = queue.shift();
      if (q !== undefined) take(q);
      else waiting.push(take);
    });
}

async function waitUntilStopped(pid: number): Promise<void> {
  const { readFileSync } = await import("node:fs");
  for (;;) {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("T")) return;
    await sleep(10);
  }
}

describe("issue 9: lock defects", () => {
  it("a holder frozen between its fenced read and write past its expiry does not land the write (no lost read-modify-write)", async () => {
    const locksC = await lockContainer();
    const data = await dataContainer();
    await fencedCreate(data, { id: "counter", value: 0 }, 0);
    const script = fileURLToPath(new URL("../support/fenced-writer-child.ts", import.meta.url));
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
          locks: locksC.id,
          data: data.id,
          name: "rmw",
          ttlSeconds: TTL_S,
        }),
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    try {
      const next = jsonLines(child.stdout as NodeJS.ReadableStream);
      await next(); // the child holds the lock
      child.stdin?.write("go\n");
      await waitUntilStopped(child.pid as number); // frozen after its read, before its write
      const b = new LockClient({ container: locksC, owner: "b", ttlSeconds: TTL_S });
      const { lock } = await acquireWhenFree(b, "rmw");
      // The new holder's read-modify-write: read, then write what it computed.
      const read = (await readItem<{ id: string; value: number }>(data, "counter", "counter")) as {
        value: number;
      };
      child.kill("SIGCONT");
      const paused = await next();
      await fencedUpdate<{ id: string; value: number }>(data, "counter", "counter", lock, (cur) => ({
        ...cur,
        value: read.value + 1,
      }));
      await lock.release();
      const acknowledged = 1 + (paused.ok === true ? 1 : 0);
      const final = (await readItem<{ value: number }>(data, "counter", "counter"))?.value;
      // Old code: 2 acknowledged increments, counter 1 (the frozen holder's write landed first).
      expect(final).toBe(acknowledged);
      expect(paused).toEqual({ error: "LockLostError" });
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("fencedRead stamps the reader's token, so an older holder's later write is refused", async () => {
    const locksC = await lockContainer();
    const data = await dataContainer();
    await fencedCreate(data, { id: "doc", value: 0 }, 0);
    const a = await new LockClient({ container: locksC, owner: "a", ttlSeconds: TTL_S }).tryAcquire("fr", {
      autoRenew: false,
    });
    const { lock: b } = await acquireWhenFree(
      new LockClient({ container: locksC, owner: "b", ttlSeconds: TTL_S }),
      "fr",
    );
    const seen = await fencedRead<{ id: string; value: number }>(data, "doc", "doc", b);
    expect(seen.fencingToken).toBe(b.fencingToken);
    // The stale holder, even if it believed itself valid, can no longer write.
    const staleLock = { name: "fr", fencingToken: a.fencingToken, assertHeld: () => {} };
    await expect(
      fencedUpdate<{ id: string; value: number }>(data, "doc", "doc", staleLock, (cur) => ({
        ...cur,
        value: 99,
      })),
    ).rejects.toBeInstanceOf(StaleFencingTokenError);
    await b.release();
  });

  it("renew() after the deadline reports the loss and writes nothing, even before the deadline timer ran", async () => {
    const c = await lockContainer();
    const a = new LockClient({ container: c, owner: "a", ttlSeconds: TTL_S });
    const lock = await a.tryAcquire("late", { autoRenew: false });
    const etag = lock.etag;
    freezeProcess(lock.validUntil - performance.now() + 100);
    const renewed = lock.renew();
    await expect(renewed).rejects.toBeInstanceOf(LockLostError);
    expect(((await renewed.catch((e) => e)) as LockLostError).reason).toBe("expired");
    expect((await readItem(c, "late", "late"))?._etag).toBe(etag);
  });

  it("a failed acquisition after the lock document was written leaves no orphan lock", async () => {
    const c = await lockContainer();
    // Fault: the create's response loses its session token (no fencing token can be derived from it).
    const faulty = t.newClient(
      faultPlugins({
        match: (ctx) => ctx.method === "POST" && (ctx.path ?? "").endsWith(`/colls/${c.id}/docs`),
        run: async (_ctx, send) => {
          const response = (await send()) as { headers: Record<string, unknown> };
          delete response.headers["x-ms-session-token"];
          return response;
        },
      }),
    );
    const locks = new LockClient({ container: faulty.database(db.id).container(c.id), ttlSeconds: TTL_S });
    await expect(locks.acquire("orphan")).rejects.toThrow(/session token/);
    expect(await readItem(c, "orphan", "orphan")).toBeUndefined();
  });

  it("the create → 409 → read → 404 race is retried a bounded number of times", async () => {
    const c = await lockContainer();
    const holder = await new LockClient({ container: c, owner: "h", ttlSeconds: TTL_S }).acquire("race");
    let reads = 0;
    // Fault: every read of the lock answers 404, as if the holder released right after each 409.
    const faulty = t.newClient(
      faultPlugins({
        match: (ctx) => ctx.method === "GET" && (ctx.path ?? "").includes(`/colls/${c.id}/docs/race`),
        run: async () => {
          reads++;
          throw serviceError(404);
        },
      }),
    );
    const locks = new LockClient({ container: faulty.database(db.id).container(c.id), ttlSeconds: TTL_S });
    await expect(locks.tryAcquire("race")).rejects.toBeInstanceOf(LockHeldError);
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThanOrEqual(5);
    await holder.release();
  });

  it("refuses a lock container with TTL off, with a clear error", async () => {
    const c = await lockContainer(false);
    const locks = new LockClient({ container: c, ttlSeconds: TTL_S });
    const err = await locks.acquire("x").catch((e) => e);
    expect(err).toBeInstanceOf(LockContainerError);
    expect((err as Error).message).toMatch(/TTL off/);
    expect(await readItem(c, "x", "x")).toBeUndefined();
    const missing = new LockClient({ container: db.container(uniqueName("nope")), ttlSeconds: TTL_S });
    const gone = await missing.verifyContainer().catch((e) => e);
    expect(gone).toBeInstanceOf(LockContainerError);
    expect((gone as LockContainerError).statusCode).toBe(404);
  });

  it("serves waiters in arrival order; a holder that re-acquires at once queues behind them", async () => {
    const c = await lockContainer();
    const client = (owner: string) =>
      new LockClient({ container: t.newClient().database(db.id).container(c.id), owner, ttlSeconds: TTL_S });
    const h = client("h");
    const first = await h.acquire("fifo");
    const order: string[] = [];
    const queued = async () =>
      (await readItem<{ tickets: { owner: string }[] }>(c, "$queue:fifo", "$queue:fifo"))?.tickets.length ??
      0;
    // Arrival order made certain: each waiter starts once the one before it has its ticket in the queue.
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) {
      waiters.push(
        (async () => {
          const lock = await client(`w${i}`).acquire("fifo", { waitMs: WAIT_MS });
          order.push(`w${i}`);
          await sleep(30);
          await lock.release();
        })(),
      );
      await waitUntil(`w${i}'s ticket`, async () => (await queued()) === i + 1);
    }
    await first.release();
    const again = await h.acquire("fifo", { waitMs: WAIT_MS });
    order.push("h");
    await again.release();
    await Promise.all(waiters);
    expect(order).toEqual(["w0", "w1", "w2", "w3", "w4", "h"]);
  });
});

describe("issue 9: waiter queue", () => {
  it("a dead waiter's ticket holds up the queue only until it lapses, and is pruned", async () => {
    const c = await lockContainer();
    const options = { ttlSeconds: TTL_S, ticketLifetimeMs: 1_000, clockSkewAllowanceMs: 200 };
    // A waiter that queued and died: its ticket is ahead of everyone, and nobody will refresh it. The queue
    // document itself lives an hour, so only the ghost's ticket lapsing can let the next waiter in.
    const ghostExpiresAt = Date.now() + 1_000;
    await createItem(c, {
      id: "$queue:ghosted",
      lock: "ghosted",
      ttl: 3_600,
      tickets: [{ id: "ghost", owner: "dead", expiresAt: ghostExpiresAt }],
    });
    const holder = await new LockClient({ container: c, owner: "h", ...options }).acquire("ghosted");
    setTimeout(() => void holder.release(), 100);
    const lock = await new LockClient({ container: c, owner: "w", ...options }).acquire("ghosted", {
      waitMs: WAIT_MS,
    });
    // It waited its turn behind the ghost: until the ghost's ticket lapsed (its expiry + the skew allowance) on
    // this machine's clock, which wrote it. (Waiting for nothing but the lapse: the queue document outlives the test.)
    expect(Date.now()).toBeGreaterThanOrEqual(ghostExpiresAt + 200);
    await lock.release();
    await sleep(200); // the leave runs alongside the holder's work
    const queue = await readItem<{ tickets: { id: string }[] }>(c, "$queue:ghosted", "$queue:ghosted");
    expect(queue?.tickets.map((x) => x.id) ?? []).not.toContain("ghost");
  });
});

describe("issue 9: HTTP guard", () => {
  it("returns the handler's response when the release fails after the handler committed", async () => {
    const c = await lockContainer();
    const data = await dataContainer();
    // Fault: deleting the lock document (the release) fails with a 500.
    const faulty = t.newClient(
      faultPlugins({
        match: (ctx) => ctx.method === "DELETE" && (ctx.path ?? "").includes(`/colls/${c.id}/docs/`),
        run: async () => {
          throw serviceError(500);
        },
      }),
    );
    const locks = new LockClient({ container: faulty.database(db.id).container(c.id), ttlSeconds: TTL_S });
    const response = await guardWithLock(locks, "commit", async () => {
      await createItem(data, { id: "committed" });
      return { status: 201, body: { id: "committed" } };
    });
    expect(response.status).toBe(201);
    expect(await readItem(data, "committed", "committed")).toBeDefined();
  });
});
