import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { WAIT_MS } from "../../bench/lib/until.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const bin = join(root, "packages", "devhost", "bin", "cosmos-feed.js");
const scratch = mkdtempSync(join(tmpdir(), "cosmos-feed-cli-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the `cosmos-feed` bin to completion (it must end on its own within the test timeout). */
function run(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: root });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Resolves with the first stdout line matching `pattern`. */
function lineMatching(child: ChildProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (d) => {
      out += d;
      const m = pattern.exec(out);
      if (m) resolve(m);
    });
    child.once("exit", (code) => reject(new Error(`exited (${code}) before printing ${pattern}: ${out}`)));
  });
}

async function portAnswers(port: number): Promise<boolean> {
  try {
    await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(WAIT_MS) });
    return true;
  } catch {
    return false;
  }
}

/** One line, no stack trace. */
function expectOneLine(stderr: string): void {
  const lines = stderr.split("\n").filter((l) => l.trim().length > 0 && !l.startsWith("npm warn"));
  expect(lines).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
}

describe("cosmos-feed command line", () => {
  it("prints the package version with --version", async () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    const r = await run(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it("says in one line that a port is taken and how to choose another", async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await run(["emulator", "--port", String(port)]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Port ${port}`);
      expect(r.stderr).toContain("already in use");
      expect(r.stderr).toContain("--port");
      expectOneLine(r.stderr);
    } finally {
      taken.close();
    }
  });

  it("refuses a --data-dir that is a file, or under one, with a message instead of a hang", async () => {
    const file = join(scratch, "a-file");
    writeFileSync(file, "not a directory");
    for (const dir of [file, join(file, "below")]) {
      const r = await run(["emulator", "--port", "0", "--data-dir", dir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Cannot keep data in '${dir}'`);
      expectOneLine(r.stderr);
    }
  });

  it("refuses an unwritable --data-dir (under Linux's /proc, where Node's recursive mkdir loops forever)", async () => {
    expect(existsSync("/proc/self")).toBe(true);
    const r = await run(["emulator", "--port", "0", "--data-dir", "/proc/cosmos-feed/data"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Cannot keep data in '/proc/cosmos-feed/data'");
    expectOneLine(r.stderr);
  });

  // npm forwards SIGINT and SIGTERM to the shell it runs the script in (`sh -c`), which does not exec the CLI:
  // a SIGTERM kills that shell (the CLI notices its parent is gone, packages/emulator/src/lifecycle/npm-shell.ts), and a SIGINT is held by
  // it — Ctrl-C works because a terminal sends it to the whole process group, as here.
  it("`npm start` serves the app and stops, emulator included, on Ctrl-C (SIGINT to the group) and SIGTERM sent to npm", async () => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      const dataDir = join(scratch, `start-${signal}`);
      const npm = spawn(
        "npm",
        ["start", "--silent", "--", "--port", "0", "--emulator-port", "0", "--data-dir", dataDir],
        { cwd: root, detached: signal === "SIGINT" },
      );
      const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
      const [, emulatorPort] = await lineMatching(
        npm,
        /emulator listening on https:\/\/127\.0\.0\.1:(\d+)\//,
      );
      const [, httpPort] = await lineMatching(npm, /http:\/\/127\.0\.0\.1:(\d+)\/api\/health/);
      await lineMatching(npm, /Host started/);
      const health = await fetch(`http://127.0.0.1:${httpPort}/api/health`);
      expect(health.status).toBe(200);
      expect(await portAnswers(Number(emulatorPort))).toBe(true);
      if (signal === "SIGINT") process.kill(-(npm.pid as number), signal);
      else npm.kill(signal);
      await exited;
      // The dev host and its emulator behind npm are gone too: nothing answers on their ports.
      await expect.poll(() => portAnswers(Number(httpPort)), { timeout: WAIT_MS }).toBe(false);
      await expect.poll(() => portAnswers(Number(emulatorPort)), { timeout: WAIT_MS }).toBe(false);
    }
  });
});
