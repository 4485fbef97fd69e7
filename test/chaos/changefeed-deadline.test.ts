/**
 * The local lease deadline across real processes: host A holds a batch of its only lease, then loses the
 * ability to write leases (an injected 503 on every lease-container write; it can still read the feed). A
 * second host B is alive and takes the lease once it has expired. A's handler must see its `ctx.signal` abort
 * before B acquires the lease — ordered by CLOCK_MONOTONIC, which every process of the machine shares.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CosmosClient } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { type RunningEmulator, startEmulator } from "../../packages/emulator/src/index.js";
import { untilReady } from "../support/child.js";
import type { ProcessorChildConfig } from "../support/processor-child.js";

/**
 * A's deadline falls leaseSafetyMargin before the lease expires for B: 1.5 s, so that A's abort comes first
 * even when a loaded machine runs A's timer late (with expiration 2 s the default margin would be 200 ms).
 */
/**
 * The safety margin is what host-a's event loop may lag by and still abort before host-b's acquisition: at load 19
 * on 2 cores (two CI runs beside other work) 1.5 s of a 4 s expiration was not enough, so 6 s of 12 s (a lease is
 * renewed once 4 s old: the margin must be shorter than expiration − that age, options.ts).
 */
const INTERVALS = {
  leaseRenewInterval: 4_000,
  leaseAcquireInterval: 300,
  leaseExpirationInterval: 12_000,
  leaseSafetyMargin: 6_000,
  feedPollDelay: 100,
};

const script = fileURLToPath(new URL("../support/processor-child.ts", import.meta.url));
const projectRoot = fileURLToPath(new URL("../..", import.meta.url));

let emulator: RunningEmulator;
let client: CosmosClient;
let dir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
  client = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key });
  dir = mkdtempSync(join(tmpdir(), "cf-deadline-"));
});
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  client.dispose();
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Spawns a host; resolves once it started. Its stderr (lease events with CLOCK_MONOTONIC times) goes to a file. */
async function spawnHost(config: Omit<ProcessorChildConfig, "endpoint" | "key" | "logFile">) {
  const errFile = join(dir, `${config.instanceName}.err`);
  const full: ProcessorChildConfig = {
    endpoint: emulator.endpoint,
    key: emulator.key,
    logFile: join(dir, `${config.instanceName}.jsonl`),
    ...config,
  };
  const errFd = openSync(errFile, "a");
  const proc = spawn(process.execPath, ["--import", "tsx", script, JSON.stringify(full)], {
    cwd: projectRoot,
    stdio: ["ignore", "ignore", errFd, "ipc"],
  });
  closeSync(errFd);
  children.push(proc);
  await untilReady(proc, config.instanceName);
  const lines = () => readFileSync(errFile, "utf8").split("\n");
  /** The CLOCK_MONOTONIC time (ns) of the first stderr line matching `pattern` ("… at <t>"), if any. */
  const timeOf = (pattern: RegExp): bigint | undefined => {
    const line = lines().find((l) => pattern.test(l));
    const t = line?.match(/ at (\d+)$/)?.[1];
    return t === undefined ? undefined : BigInt(t);
  };
  return { proc, lines, timeOf };
}

describe("local lease deadline across processes", () => {
  it("a host that cannot write its lease aborts the handler's signal before another host acquires it", async () => {
    const { database } = await client.databases.create({ id: "deadline" });
    const { container: monitored } = await database.containers.create({
      id: "data",
      partitionKey: { paths: ["/pk"], version: 2 },
    });
    const { container: leases } = await database.containers.create({
      id: "leases",
      partitionKey: { paths: ["/id"] },
      defaultTtl: -1,
    });
    const common = { databaseId: database.id, monitoredId: monitored.id, leaseId: leases.id, ...INTERVALS };
    const a = await spawnHost({
      ...common,
      instanceName: "host-a",
      holdBatches: true,
      cutLeaseWritesOnSigusr2: true,
    });
    await monitored.items.create({ id: "d0", pk: "k0", n: 0 });
    await waitUntil("host-a holding a batch of lease 0", () => a.lines().some((l) => / holding 0$/.test(l)));
    const b = await spawnHost({ ...common, instanceName: "host-b" });
    a.proc.kill("SIGUSR2");
    await waitUntil("host-b acquiring lease 0", () => b.timeOf(/ acquired 0 at /) !== undefined);
    const cut = a.timeOf(/ lease writes cut at /);
    const aborted = a.timeOf(/ signal 0 aborted at /);
    const acquired = b.timeOf(/ acquired 0 at /) as bigint;
    expect(cut).toBeDefined();
    expect(aborted, "host-a's ctx.signal never fired").toBeDefined();
    expect((aborted as bigint) > (cut as bigint)).toBe(true);
    expect((aborted as bigint) < acquired).toBe(true);
    expect(a.lines().some((l) => / lost 0 \(expired\) at /.test(l))).toBe(true);
  });
});
