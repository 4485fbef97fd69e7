/**
 * Scenario 4, crash takeover: a lock holder in its own process (test/support/lock-holder-child.ts) renews once and
 * is killed with SIGKILL; another client polls tryAcquire until it holds the lock. How long after the kill, and
 * how long after the lock lapsed (its last write's `_ts` + ttl, whole seconds as the service keeps them). This was
 * a bound in test/integration/locks.test.ts (within TTL + sweep interval + 1.5 s of the kill); it depends on the
 * machine's load, so it is measured here and the test judges only the order of events and the fencing token.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Container } from "@azure/cosmos";
import { LockClient, LockDefaults, LockHeldError } from "@cosmos-feed/locks";
import { median } from "../lib/stats.js";
import { config, type EmulatorProcess, ROOT, sleep } from "./setup.js";

const CHILD = join(ROOT, "test", "support", "lock-holder-child.ts");

/** One crash: spawn, one renewal, SIGKILL, poll until acquired. */
async function trial(emu: EmulatorProcess, locksC: Container, name: string) {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      CHILD,
      JSON.stringify({
        endpoint: emu.endpoint,
        key: emu.key,
        database: config.database,
        container: config.lockContainer,
        name,
        ttlSeconds: config.crashTtlSeconds,
      }),
    ],
    { stdio: ["ignore", "pipe", "inherit"], cwd: ROOT },
  );
  const exited = new Promise((r) => child.once("exit", r));
  const line = await new Promise<string>((resolve) =>
    createInterface({ input: child.stdout }).once("line", resolve),
  );
  const childToken = (JSON.parse(line) as { token: number }).token;
  const read = async () => (await locksC.item(name, name).read<{ _etag: string; _ts: number }>()).resource;
  const first = (await read())?._etag;
  while ((await read())?._etag === first) await sleep(20);
  child.kill("SIGKILL");
  const killedAt = performance.now();
  const killedWall = Date.now();
  await exited;
  const lastTs = (await read())?._ts ?? 0;
  const b = new LockClient({
    container: locksC,
    owner: "crash-successor",
    ttlSeconds: config.crashTtlSeconds,
  });
  for (;;) {
    try {
      const lock = await b.tryAcquire(name, { autoRenew: false });
      const acquiredAfterKillMs = Math.round(performance.now() - killedAt);
      const lapseWall = (lastTs + config.crashTtlSeconds) * 1000;
      await lock.release();
      return {
        acquiredAfterKillMs,
        /** From the lapse (last write's _ts + ttl) to the successor's grant, on the wall clock. */
        acquiredAfterLapseMs: killedWall + acquiredAfterKillMs - lapseWall,
        largerToken: lock.fencingToken > childToken,
      };
    } catch (e) {
      if (!(e instanceof LockHeldError)) throw e;
      await sleep(20);
    }
  }
}

export async function crashScenario(emu: EmulatorProcess, locksC: Container) {
  const trials = [];
  for (let i = 0; i < config.crashTrials; i++) trials.push(await trial(emu, locksC, `crash-${i}`));
  const ttlMs = config.crashTtlSeconds * 1000;
  // The test's old bound: TTL + the emulator's sweep interval (1 s by default here) + 1.5 s.
  const boundMs = ttlMs + config.crashSweepIntervalMs + 1_500;
  const afterKill = trials.map((t) => t.acquiredAfterKillMs);
  return {
    how:
      `${config.crashTrials} trials: a holder process (ttl ${config.crashTtlSeconds} s, default renewals) renews once, ` +
      "gets SIGKILL; another client polls tryAcquire every 20 ms. The lapse is the holder's last write's _ts + ttl " +
      "(the emulator hides an expired document at once; the real service may keep it until its purge, and the lock " +
      `client then waits clockSkewAllowanceMs = ${LockDefaults.clockSkewAllowanceMs} ms past the lapse).`,
    ttlSeconds: config.crashTtlSeconds,
    trials,
    acquiredAfterKillMs: {
      min: Math.min(...afterKill),
      median: median(afterKill),
      max: Math.max(...afterKill),
    },
    boundMs,
    withinBound: afterKill.filter((ms) => ms <= boundMs).length,
    everyTokenLarger: trials.every((t) => t.largerToken),
  };
}
