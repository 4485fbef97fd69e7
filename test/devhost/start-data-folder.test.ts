import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { LOCK_FILE } from "../../packages/emulator/src/lifecycle/dataFolderLock.js";
import { type CliRun, killAll, removeScratch, repoRoot, runCli, scratchDir } from "../support/start-cli.js";

const runs: CliRun[] = [];
afterEach(() => killAll(runs));
afterAll(removeScratch);

const APP = join(repoRoot, "test", "fixtures", "app-cjs");
const READY = /Host lock lease acquired by instance ID/;

function cli(args: string[]): CliRun {
  const run = runCli(args);
  runs.push(run);
  return run;
}

/** Whichever comes first: the exit code, or "started" when the dev host printed that it runs. */
function outcome(run: CliRun): Promise<number | null | "started"> {
  return Promise.race([run.exited, run.waitFor(/Host started/).then(() => "started" as const)]);
}

/** The id of a process that has ended. */
function deadPid(): number {
  const ended = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(ended.stdout.toString());
}

describe("one process per data folder", () => {
  it("refuses a second `start` (and an `emulator`) on the data folder in use, in one line naming the folder and the process", async () => {
    const dataDir = scratchDir("shared-data-");
    const first = cli(["start", APP, "--port", "0", "--emulator-port", "0", "--data-dir", dataDir]);
    await first.waitFor(READY);
    const lock = JSON.parse(readFileSync(join(dataDir, LOCK_FILE), "utf8")) as { pid: number };
    expect(lock.pid).toBe(first.child.pid);

    const second = cli(["start", APP, "--port", "0", "--emulator-port", "0", "--data-dir", dataDir]);
    expect(await outcome(second)).toBe(1);
    const lines = second
      .output()
      .split("\n")
      .filter((l) => l.startsWith("cosmos-feed start:"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^cosmos-feed start: The data folder '${dataDir}' is in use by process ${first.child.pid} \\(cosmos-feed start ${APP}, since \\S+\\): stop that one, or use another folder with --data-dir <dir>\\.$`,
      ),
    );

    const emulator = cli(["emulator", "--port", "0", "--data-dir", dataDir]);
    expect(await emulator.exited).toBe(1);
    expect(emulator.output()).toContain(
      `cosmos-feed emulator: The data folder '${dataDir}' is in use by process ${first.child.pid}`,
    );

    first.child.kill("SIGINT");
    expect(await first.exited).toBe(0);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false); // unlocked by the stop
  });

  it("takes over the lock of a process that no longer runs", async () => {
    const dataDir = scratchDir("stale-data-");
    const pid = deadPid();
    writeFileSync(
      join(dataDir, LOCK_FILE),
      JSON.stringify({ pid, holder: "cosmos-feed start /gone", startedAt: "2026-01-01T00:00:00.000Z" }),
    );
    const run = cli(["start", APP, "--port", "0", "--emulator-port", "0", "--data-dir", dataDir]);
    await run.waitFor(READY);
    expect(run.output()).toContain(
      `Taking over the data folder lock of process ${pid}, which no longer runs (${join(dataDir, LOCK_FILE)}).`,
    );
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });
});
