// Scenario 3 (issue 33): another project's tests start the emulator package — from vitest's globalSetup and from a
// plain `node --test` suite — on a free port, in memory, and run @azure/cosmos calls against it (a database and a
// container, writes, a query, the change feed: fixtures/consumer/sdk-calls.mjs). The project is installed from the
// emulator and core tarballs, with vitest and @azure/cosmos from the registry; its suites run as it runs them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { settled } from "../../bench/lib/until.js";
import { type CliRun, killAll } from "../support/start-cli.js";
import { outside, runOutside } from "./support/outside.js";

const runs: CliRun[] = [];
afterEach(() => killAll(runs));

function runIn(dir: string, command: string, args: string[]): CliRun {
  const run = runOutside(command, args, dir);
  runs.push(run);
  return run;
}

describe("the emulator package in another project's tests", () => {
  it("vitest: globalSetup starts it, the tests reach it through inject()", async () => {
    const dir = outside().scenarios.emulatorInTests.dir;
    const report = join(dir, "vitest-report.json");
    const run = runIn(dir, "npx", ["vitest", "run", "--reporter=json", `--outputFile=${report}`]);
    expect(await settled("the project's vitest run", run.exited), run.output()).toBe(0);
    const result = JSON.parse(readFileSync(report, "utf8")) as {
      numPassedTests: number;
      numFailedTests: number;
      testResults: { name: string }[];
    };
    expect(result.numFailedTests).toBe(0);
    expect(result.numPassedTests).toBe(2);
    expect(result.testResults.map((r) => r.name)).toEqual([join(dir, "test", "cosmos.test.mjs")]);
  });

  it("node --test: a before() hook starts it, after() closes it, the process exits by itself", async () => {
    const dir = outside().scenarios.emulatorInTests.dir;
    const run = runIn(dir, process.execPath, ["--test", "--test-reporter=tap", "node-test/cosmos.test.mjs"]);
    // The file runs in a child of node --test, which ends when its event loop is empty: close() let go of everything.
    expect(await settled("the project's node --test run", run.exited), run.output()).toBe(0);
    expect(run.output()).toMatch(/^# pass 2$/m);
    expect(run.output()).toMatch(/^# fail 0$/m);
  });
});
