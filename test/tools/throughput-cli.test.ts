/**
 * `cosmos-feed throughput` as a user runs it, against the emulator's offers API: read manual and autoscale
 * throughput, change each, refuse what the service refuses (one line), and the lease container recommendation.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

const run = promisify(execFile);
let t: TestEmulator;
let db: Database;
/** A database with shared throughput (400 RU/s) and a container without its own. */
let sharedDb: Database;
const cliOn = (database: string, args: string[]) =>
  run(
    process.execPath,
    [
      join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"),
      "throughput",
      "--connection",
      t.emulator.connectionString,
      "--database",
      database,
      ...args,
    ],
    { cwd: repoRoot },
  );
const cli = (args: string[]) => cliOn(db.id, args);
const fail = async (cmd: Promise<unknown>) =>
  (await cmd.catch((e: unknown) => e)) as { code: number; stderr: string };

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("tp") })).database;
  await db.containers.create({ id: "manual", partitionKey: "/id" }, { offerThroughput: 400 });
  await db.containers.create({ id: "auto", partitionKey: "/id", maxThroughput: 4000 });
  // As the dev host creates the app's containers on the emulator: no throughput, in a database without any.
  await db.containers.create({ id: "bare", partitionKey: "/id" });
  sharedDb = (await t.client.databases.create({ id: uniqueName("tpshared"), throughput: 400 })).database;
  await sharedDb.containers.create({ id: "sharing", partitionKey: "/id" });
});
afterAll(async () => {
  await t?.close();
});

describe("cosmos-feed throughput", () => {
  it("reads and sets manual throughput, with the lease container recommendation", async () => {
    const before = JSON.parse((await cli(["--container", "manual", "--json"])).stdout);
    expect(before).toMatchObject({ mode: "manual", throughput: 400, minimumThroughput: 400 });
    const set = JSON.parse(
      (await cli(["--container", "manual", "--set", "800", "--hosts", "4", "--leases", "32", "--json"]))
        .stdout,
    );
    expect(set).toMatchObject({ mode: "manual", throughput: 800, changed: { from: 400, to: 800 } });
    expect(set.recommendation.recommendedManualThroughput).toBeGreaterThanOrEqual(400);
    expect(set.recommendation.dotnetLeaseRuPerSecond).toBeGreaterThan(
      set.recommendation.oursLeaseRuPerSecond,
    );
    expect((await db.container("manual").readOffer()).resource?.content?.offerThroughput).toBe(800);
    const text = (await cli(["--container", "manual"])).stdout;
    expect(text).toContain("manual, 800 RU/s");
  });

  it("reads and sets the autoscale maximum", async () => {
    const r = JSON.parse((await cli(["--container", "auto", "--autoscale", "6000", "--json"])).stdout);
    expect(r).toMatchObject({
      mode: "autoscale",
      autoscaleMaxThroughput: 6000,
      changed: { from: 4000, to: 6000 },
    });
  });

  it("refuses with one line: the wrong mode, a value the service refuses, a missing container", async () => {
    const wrongMode = await fail(cli(["--container", "auto", "--set", "800"]));
    expect(wrongMode.code).toBe(1);
    expect(wrongMode.stderr).toContain("uses autoscale");
    const refused = await fail(cli(["--container", "manual", "--set", "450"]));
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain("refused by the service");
    const missing = await fail(cli(["--container", "nope"]));
    expect(missing.stderr).toContain("does not exist");
  });

  it("a container created without throughput in a database without any (the dev host's): the service's 400 RU/s, settable", async () => {
    const read = JSON.parse((await cli(["--container", "bare", "--json"])).stdout);
    expect(read).toMatchObject({ mode: "manual", throughput: 400 });
    const set = JSON.parse((await cli(["--container", "bare", "--set", "800", "--json"])).stdout);
    expect(set).toMatchObject({ mode: "manual", throughput: 800, changed: { from: 400, to: 800 } });
    const database = await fail(cli(["--set", "800"]));
    expect(database.stderr).toContain(`database ${db.id} has no shared throughput`);
  });

  it("a container sharing its database's throughput: names the database's offer and where to change it", async () => {
    const read = JSON.parse((await cliOn(sharedDb.id, ["--container", "sharing", "--json"])).stdout);
    expect(read).toMatchObject({
      mode: "none",
      sharedFromDatabase: { database: sharedDb.id, mode: "manual", throughput: 400 },
    });
    const set = await fail(cliOn(sharedDb.id, ["--container", "sharing", "--set", "800"]));
    expect(set.code).toBe(1);
    expect(set.stderr).toContain(
      `it shares database ${sharedDb.id}'s (manual 400 RU/s); change that one, without --container`,
    );
    const dbSet = JSON.parse((await cliOn(sharedDb.id, ["--set", "800", "--json"])).stdout);
    expect(dbSet).toMatchObject({ mode: "manual", throughput: 800, changed: { from: 400, to: 800 } });
  });

  it("a serverless account: says it has no offers, and refuses a change with one line", async () => {
    const serverless = await startTestEmulator({ capacityMode: "serverless" });
    try {
      const sdb = (await serverless.client.databases.create({ id: uniqueName("tpsl") })).database;
      await sdb.containers.create({ id: "c", partitionKey: "/id" });
      const args = (extra: string[]) => [
        join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"),
        "throughput",
        "--connection",
        serverless.emulator.connectionString,
        "--database",
        sdb.id,
        "--container",
        "c",
        ...extra,
      ];
      const read = JSON.parse((await run(process.execPath, args(["--json"]), { cwd: repoRoot })).stdout);
      expect(read).toMatchObject({ mode: "none", serverless: true, throughput: null });
      const text = (await run(process.execPath, args([]), { cwd: repoRoot })).stdout;
      expect(text).toContain("a serverless account (no offers; up to 5,000 RU/s per physical partition)");
      const set = await fail(run(process.execPath, args(["--set", "800"]), { cwd: repoRoot }));
      expect(set.code).toBe(1);
      expect(set.stderr.trim().split("\n")).toHaveLength(1);
      expect(set.stderr).toContain("is on a serverless account: it has no throughput to change");
    } finally {
      await serverless.close();
    }
  });
});
