import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";

// `cosmos-feed tune` as a user runs it: JSON of both algorithms, a sweep that writes its SVG chart, and bad input
// as one clear line.

const run = promisify(execFile);
const tune = (args: string[]) =>
  run(process.execPath, [join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"), "tune", ...args], {
    cwd: repoRoot,
  });
const dir = mkdtempSync(join(tmpdir(), "tune-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("cosmos-feed tune", () => {
  it("prints both algorithms' cost and bounds as JSON", async () => {
    const { stdout } = await tune(["--hosts", "4", "--leases", "32", "--json"]);
    const r = JSON.parse(stdout) as {
      ours: { leaseRequestsPerHour: number };
      dotnet: { leaseRequestsPerHour: number; failoverMs: { max: number } };
    };
    expect(r.ours.leaseRequestsPerHour).toBe(6_988);
    expect(r.dotnet.leaseRequestsPerHour).toBe(14_661);
    expect(r.dotnet.failoverMs.max).toBe(73_000);
  });

  it("--sweep draws RU/s against failover time into an SVG", async () => {
    const svg = join(dir, "sweep.svg");
    const { stdout } = await tune([
      "--hosts",
      "2",
      "--leases",
      "8",
      "--sweep",
      "leaseExpirationInterval=30s..120s:4",
      "--svg",
      svg,
    ]);
    expect(stdout.trim().split("\n")).toHaveLength(1 + 4 + 2);
    const chart = readFileSync(svg, "utf8");
    expect(chart).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(chart.match(/<polyline /g)).toHaveLength(3);
  });

  it("bad input is one line and exit 1", async () => {
    const e = (await tune(["--renew", "soon"]).catch((x: unknown) => x)) as { code: number; stderr: string };
    expect(e.code).toBe(1);
    expect(e.stderr.trim().split("\n")).toEqual([
      "cosmos-feed tune: --renew is a duration such as 500ms, 17s, 2m or 1h; got 'soon'.",
    ]);
    const f = (await tune(["--renew", "90s"]).catch((x: unknown) => x)) as { code: number; stderr: string };
    expect(f.code).toBe(1);
    expect(f.stderr).toContain("leaseRenewIntervalMs must be below leaseExpirationIntervalMs");
  });

  it("refuses options the chosen mode would ignore, in one line and exit 1", async () => {
    const refused = async (args: string[]) => {
      const e = (await tune(args).catch((x: unknown) => x)) as { code: number; stderr: string };
      expect(e.code).toBe(1);
      return e.stderr.trim().split("\n");
    };
    expect(await refused(["--measure", "--sweep", "leaseExpirationInterval=30s..120s:4"])).toEqual([
      "cosmos-feed tune: --sweep, --svg and --png do not go with --measure; got --sweep.",
    ]);
    expect(await refused(["--measure", "--svg", join(dir, "x.svg"), "--no-png"])).toEqual([
      "cosmos-feed tune: --sweep, --svg and --png do not go with --measure; got --svg, --png.",
    ]);
    expect(await refused(["--scale", "10"])).toEqual([
      "cosmos-feed tune: --scale and --window go with --measure only; got --scale.",
    ]);
    expect(await refused(["--hosts", "2", "--window", "5s"])).toEqual([
      "cosmos-feed tune: --scale and --window go with --measure only; got --window.",
    ]);
  });
});
