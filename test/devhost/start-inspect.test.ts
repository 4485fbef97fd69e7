import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { freePort } from "../support/free-port.js";
import { type CdpSession, connectInspector } from "../support/inspector.js";
import { scratchApps } from "../support/scratch-apps.js";
import { type CliRun, killAll, runCli } from "../support/start-cli.js";

// `cosmos-feed start --inspect=<port>` as a real child process: the flag reaches the worker process and only it
// (the inspector that answers is not the CLI's process), and a value node would not take is one line and exit 1.

const apps = scratchApps("start-inspect-");
const dataDir = mkdtempSync(join(tmpdir(), "start-inspect-data-"));
const runs: CliRun[] = [];
const sessions: CdpSession[] = [];
afterEach(() => {
  for (const s of sessions.splice(0)) s.close();
  killAll(runs);
});
afterAll(() => {
  apps.removeAll();
  rmSync(dataDir, { recursive: true, force: true });
});

const appDir = () =>
  apps.write({
    "package.json": JSON.stringify({ name: "start-inspect", type: "module", main: "src/*.js" }),
    "host.json": JSON.stringify({ version: "2.0" }),
    "src/app.js": `import { app } from "@azure/functions";
app.http("pid", { handler: async () => ({ jsonBody: { pid: process.pid } }) });`,
  });

describe("cosmos-feed start --inspect (a real child process)", () => {
  it("opens node's debugger in the worker process, not in the CLI's", async () => {
    const port = await freePort();
    const args = ["start", appDir(), "--port", "0", "--cosmos", "emulator", "--emulator-port", "0"];
    const run = runCli([...args, "--data-dir", dataDir, "--no-build", `--inspect=${port}`]);
    runs.push(run);
    const [, url] = await run.waitFor(
      new RegExp(`Debugger listening on (ws://127\\.0\\.0\\.1:${port}/[\\w-]+)`),
    );
    const [, base] = await run.waitFor(/pid: \[GET,POST\] (http:\/\/127\.0\.0\.1:\d+)\/api\/pid/);
    await run.waitFor(/Host lock lease acquired by instance ID/);
    const cdp = await connectInspector(url);
    sessions.push(cdp);
    const { result } = await cdp.send<{ result: { value: number } }>("Runtime.evaluate", {
      expression: "process.pid",
      returnByValue: true,
    });
    const served = ((await (await fetch(`${base}/api/pid`)).json()) as { pid: number }).pid;
    expect(result.value).toBe(served);
    expect(result.value).not.toBe(run.child.pid);
    expect(run.output().match(/Debugger listening on/g)).toHaveLength(1); // one inspector: the worker's
  });

  it("says what --inspect takes when given a folder, and exits 1", async () => {
    const run = runCli(["start", "--inspect", appDir()]);
    runs.push(run);
    expect(await run.exited).toBe(1);
    expect(run.output()).toMatch(
      /^cosmos-feed start: --inspect takes \[host:\]port \(e\.g\. --inspect=9229\), not '.*'\. Give the app folder before the flag: cosmos-feed start \. --inspect\n$/,
    );
  });
});
