/**
 * `cosmos-feed throughput` as a user runs it, against the emulator's offers API: read manual and autoscale
 * throughput, change each, refuse what the service refuses (one line), and the lease container recommendation.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../e2e/support/app-child.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

const run = promisify(execFile);
let t: TestEmulator;
let db: Database;
const cli = (args: string[]) =>
  run(
    process.execPath,
    [
      join(repoRoot, "bin", "cosmos-feed.js"),
      "throughput",
      "--connection",
      t.emulator.connectionString,
      "--database",
      db.id,
      ...args,
    ],
    { cwd: repoRoot },
  );

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("tp") })).database;
  await db.containers.create({ id: "manual", partitionKey: "/id" }, { offerThroughput: 400 });
  await db.containers.create({ id: "auto", partitionKey: "/id", maxThroughput: 4000 });
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
    const fail = async (args: string[]) =>
      (await cli(args).catch((e: unknown) => e)) as { code: number; stderr: string };
    const wrongMode = await fail(["--container", "auto", "--set", "800"]);
    expect(wrongMode.code).toBe(1);
    expect(wrongMode.stderr).toContain("uses autoscale");
    const refused = await fail(["--container", "manual", "--set", "450"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain("refused by the service");
    const missing = await fail(["--container", "nope"]);
    expect(missing.stderr).toContain("does not exist");
  });
});
