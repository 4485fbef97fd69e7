import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import {
  type LogRecord,
  type StartCommandOptions,
  type StartedApp,
  startFromCommandLine,
} from "../../packages/devhost/src/index.js";
import { freePort } from "../support/free-port.js";
import { type CdpSession, connectInspector } from "../support/inspector.js";
import { scratchApps } from "../support/scratch-apps.js";

// The worker's debugger through `cosmos-feed start` in this process: the --inspect option and the
// languageWorkers__node__arguments setting of local.settings.json open node's inspector in the worker process
// (only there: this process has none), on the same port after a restart as --watch does it; a port another process
// holds is waited for. The test connects over node's inspector protocol (a real WebSocket) to see which process
// answers.

const apps = scratchApps("inspect-");
const dataDirs: string[] = [];
const running: StartedApp[] = [];
const sessions: CdpSession[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) s.close();
  for (const a of running.splice(0)) await a.stop();
  for (const s of servers.splice(0)) s.close();
});
afterAll(() => {
  apps.removeAll();
  for (const d of dataDirs) rmSync(d, { recursive: true, force: true });
});

function app(settings?: Record<string, string>): string {
  return apps.write({
    "package.json": JSON.stringify({ name: "inspect", type: "module", main: "src/*.js" }),
    "host.json": JSON.stringify({ version: "2.0" }),
    "src/app.js": `import { app } from "@azure/functions";
app.http("pid", { handler: async () => ({ jsonBody: { pid: process.pid } }) });`,
    ...(settings ? { "local.settings.json": JSON.stringify({ IsEncrypted: false, Values: settings }) } : {}),
  });
}

async function start(
  appDir: string,
  logs: LogRecord[],
  options: Partial<StartCommandOptions> = {},
): Promise<StartedApp> {
  const dataDir = mkdtempSync(join(tmpdir(), "inspect-data-"));
  dataDirs.push(dataDir);
  const started = await startFromCommandLine({
    appDir,
    port: 0,
    cosmos: "emulator",
    emulatorPort: 0,
    dataDir,
    build: false,
    env: { ...process.env },
    logSink: (r) => logs.push(r),
    ...options,
  });
  running.push(started);
  return started;
}

const listening = (port: number) =>
  new RegExp(`^Debugger listening on (ws://127\\.0\\.0\\.1:${port}/[\\w-]+)$`);

/** The n-th (1-based) "Debugger listening" line of the worker for `port`, and its level. */
function debuggerLine(logs: LogRecord[], port: number, n: number): Promise<{ url: string; level: string }> {
  return until(`worker debugger ${n} on ${port}`, async () => {
    const r = logs.filter((l) => l.category === "Worker" && listening(port).test(l.message))[n - 1];
    return r ? { url: (listening(port).exec(r.message) as RegExpExecArray)[1], level: r.level } : undefined;
  });
}

/** The pid of the process behind an inspector URL, asked over the inspector protocol. */
async function pidBehind(url: string): Promise<number> {
  const cdp = await connectInspector(url);
  sessions.push(cdp);
  const { result } = await cdp.send<{ result: { value: number } }>("Runtime.evaluate", {
    expression: "process.pid",
    returnByValue: true,
  });
  return result.value;
}

async function servedPid(started: StartedApp): Promise<number> {
  return ((await (await fetch(`${started.host.baseUrl}/api/pid`)).json()) as { pid: number }).pid;
}

describe("the worker's debugger (cosmos-feed start --inspect, languageWorkers__node__arguments)", () => {
  it("--inspect=<port> opens it in the worker, and a restart (as --watch does) gets the same port", async () => {
    const port = await freePort();
    const logs: LogRecord[] = [];
    const started = await start(app(), logs, { inspect: String(port) });
    const first = await debuggerLine(logs, port, 1);
    expect(first.level).toBe("information"); // node's line, as written, not an error
    expect(logs.map((l) => l.message)).toContain(
      `The worker process starts with node arguments '--inspect=${port}' (--inspect).`,
    );
    const pid = await servedPid(started);
    expect(pid).not.toBe(process.pid);
    expect(await pidBehind(first.url)).toBe(pid); // the worker's inspector, the session left attached

    await started.restart();
    const second = await debuggerLine(logs, port, 2);
    expect(second.url).not.toBe(first.url);
    const newPid = await servedPid(started);
    expect(newPid).not.toBe(pid);
    expect(await pidBehind(second.url)).toBe(newPid);
    expect(logs.map((l) => l.message)).toContain(
      `The debugger port 127.0.0.1:${port} is free (worker process ${pid} has exited): the next worker process listens there.`,
    );
  });

  it("takes languageWorkers__node__arguments from local.settings.json Values, %NAME% expanded", async () => {
    const port = await freePort();
    const logs: LogRecord[] = [];
    const started = await start(
      app({ DEBUG_PORT: String(port), languageWorkers__node__arguments: "--inspect=%DEBUG_PORT%" }),
      logs,
    );
    const { url } = await debuggerLine(logs, port, 1);
    expect(await pidBehind(url)).toBe(await servedPid(started));
    expect(logs.map((l) => l.message)).toContain(
      `The worker process starts with node arguments '--inspect=${port}' (languageWorkers__node__arguments).`,
    );
  });

  it("waits for a port another process holds, and the worker's debugger binds it once it is free", async () => {
    const port = await freePort();
    const holder = createServer();
    servers.push(holder);
    await new Promise<void>((resolve) => holder.listen({ host: "127.0.0.1", port }, resolve));
    const logs: LogRecord[] = [];
    const starting = start(app(), logs, {
      inspect: `127.0.0.1:${port}`,
      env: { ...process.env, DEVHOST_WORKER_INSPECTOR_PORT_WAIT_MS: "600000" },
    });
    await until("the wait for the port", async () =>
      logs.find((l) =>
        l.message.startsWith(
          `The debugger port 127.0.0.1:${port} is in use by another process: waiting up to`,
        ),
      ),
    );
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    const started = await starting;
    const { url } = await debuggerLine(logs, port, 1);
    expect(await pidBehind(url)).toBe(await servedPid(started));
  });

  it("starts the worker without its debugger when the port stays taken, saying so", async () => {
    const port = await freePort();
    const holder = createServer();
    servers.push(holder);
    await new Promise<void>((resolve) => holder.listen({ host: "127.0.0.1", port }, resolve));
    const logs: LogRecord[] = [];
    const started = await start(app(), logs, {
      inspect: String(port),
      env: { ...process.env, DEVHOST_WORKER_INSPECTOR_PORT_WAIT_MS: "0" },
    });
    expect(logs.map((l) => l.message)).toContain(
      `The debugger port 127.0.0.1:${port} is still in use: the worker process starts, but node cannot open its debugger there (its own line says so). Stop what holds the port, or choose another one (--inspect=<port>, or languageWorkers__node__arguments).`,
    );
    // node's own line, from the worker's stderr, as an error ("failed"); the app is served all the same.
    await until("node's inspector failure", async () =>
      logs.find(
        (l) =>
          l.category === "Worker" &&
          l.level === "error" &&
          l.message.includes(`Starting inspector on 127.0.0.1:${port} failed`),
      ),
    );
    expect(await servedPid(started)).not.toBe(process.pid);
  });

  it("refuses an --inspect value node would not take, in one line", async () => {
    await expect(start(app(), [], { inspect: "." })).rejects.toThrow(
      "--inspect takes [host:]port (e.g. --inspect=9229), not '.'. Give the app folder before the flag: cosmos-feed start . --inspect",
    );
  });
});
