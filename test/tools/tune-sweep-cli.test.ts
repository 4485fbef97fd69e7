import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";

// `cosmos-feed tune --sweep` as a user runs it: the SVG and, through resvg, the PNG beside it; `--no-png` and
// `--png <file>`; and the three cases of the plain table.

const run = promisify(execFile);
const tune = (args: string[]) =>
  run(process.execPath, [join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"), "tune", ...args], {
    cwd: repoRoot,
  });
const dir = mkdtempSync(join(tmpdir(), "tune-sweep-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe("cosmos-feed tune --sweep", () => {
  it("writes the SVG and a PNG beside it, and says where", async () => {
    const svg = join(dir, "expiration.svg");
    const { stdout } = await tune([
      "--hosts",
      "4",
      "--leases",
      "32",
      "--sweep",
      "leaseExpirationInterval=10s..120s",
      "--svg",
      svg,
    ]);
    const lines = stdout.trim().split("\n");
    expect(lines.slice(-2)).toEqual([`chart: ${svg}`, `chart: ${join(dir, "expiration.png")}`]);
    expect(readFileSync(svg, "utf8").match(/<polyline /g)).toHaveLength(3);
    expect(readFileSync(join(dir, "expiration.png")).subarray(0, 8)).toEqual(PNG_SIGNATURE);
  });

  it("without --svg, writes tune-sweep.svg and .png into the working directory, names git ignores", async () => {
    const cwd = mkdtempSync(join(dir, "cwd-"));
    const { stdout } = await run(
      process.execPath,
      [
        join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"),
        "tune",
        "--sweep",
        "feedPollDelay=1s..5s:3",
      ],
      { cwd },
    );
    expect(stdout.trim().split("\n").slice(-2)).toEqual(["chart: tune-sweep.svg", "chart: tune-sweep.png"]);
    expect(existsSync(join(cwd, "tune-sweep.svg"))).toBe(true);
    expect(readFileSync(join(cwd, "tune-sweep.png")).subarray(0, 8)).toEqual(PNG_SIGNATURE);
    // Run in the repository, they would not show as changes: git check-ignore prints each path it ignores.
    const paths = ["tune-sweep.svg", "tune-sweep.png", "docs/tune-sweep.svg"];
    const ignored = await run("git", ["check-ignore", ...paths], { cwd: repoRoot });
    expect(ignored.stdout.trim().split("\n")).toEqual(paths);
  });

  it("--png names the PNG, --no-png skips it; --json says which", async () => {
    const named = join(dir, "named.png");
    const { stdout } = await tune([
      "--sweep",
      "feedPollDelay=1s..5s:3",
      "--svg",
      join(dir, "poll.svg"),
      "--png",
      named,
      "--json",
    ]);
    expect(JSON.parse(stdout).png).toEqual({ written: named });
    expect(readFileSync(named).subarray(0, 8)).toEqual(PNG_SIGNATURE);

    const svgOnly = join(dir, "only.svg");
    const r = await tune(["--sweep", "feedPollDelay=1s..5s:3", "--svg", svgOnly, "--no-png", "--json"]);
    expect(JSON.parse(r.stdout).png).toBeUndefined();
    expect(existsSync(svgOnly)).toBe(true);
    expect(existsSync(join(dir, "only.png"))).toBe(false);
  });

  it("the table shows this processor with and without its watch, and .NET", async () => {
    const { stdout } = await tune(["--hosts", "4", "--leases", "32"]);
    expect(stdout).toContain("this processor, lease watch 1000 ms:");
    expect(stdout).toContain("this processor without its lease watch (leaseWatchInterval 0):");
    expect(stdout).toContain(".NET processor / Functions trigger:");
    expect(stdout.match(/hand-off on stop: ≤ ([\d.]+) s/g)).toEqual([
      "hand-off on stop: ≤ 1.15 s",
      "hand-off on stop: ≤ 13 s",
      "hand-off on stop: ≤ 13 s",
    ]);
  });
});
