import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AppChild,
  buildAppFolder,
  FAST_APP_SETTINGS,
  repoRoot,
  startAppChild,
} from "../../bench/lib/app-child.js";
import { settled, until, WAIT_MS } from "../../bench/lib/until.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import { freePort } from "../support/free-port.js";
import {
  type CdpSession,
  connectInspector,
  originalPosition,
  setBreakpointInSource,
} from "../support/inspector.js";

// A debugger on a breakpoint, as `func start` + VS Code give one: the app built as `npm run build` builds it
// (tsconfig.build.json, source maps included), run by `cosmos-feed start` as a child process with the setting VS
// Code's Azure Functions extension sets (languageWorkers__node__arguments=--inspect=<port>). The test is the
// debugger: node's inspector protocol over a real WebSocket, a breakpoint by the TypeScript file and line (through
// the source map, as VS Code resolves one), a real request, the pause there with the request in scope. Then the
// worker crashes, the dev host starts a new one, and its debugger is on the same port.

const scratch = mkdtempSync(join(tmpdir(), "cosmos-feed-debugger-"));
const appDir = join(scratch, "app");
const children: ChildProcess[] = [];
const sessions: CdpSession[] = [];
let emu: TestEmulator;
let host: AppChild;
let port: number;

/** The TypeScript source and the line of the breakpoint: getSummary's first statement, found by its text. */
const source = join(repoRoot, "functions", "admin.ts");
const breakLine =
  readFileSync(source, "utf8")
    .split("\n")
    .findIndex((l) => l.includes("sub = parseSubscriptionId(request.params.subscriptionId);")) + 1;

/** The n-th (1-based) inspector URL the worker printed on port `port`. */
async function inspectorUrl(n: number): Promise<string> {
  const re = new RegExp(`Debugger listening on (ws://127\\.0\\.0\\.1:${port}/[\\w-]+)`, "g");
  return until(`debugger ${n} on port ${port}`, async () => [...host.output().matchAll(re)][n - 1]?.[1]);
}

interface Paused {
  reason: string;
  hitBreakpoints?: string[];
  callFrames: { callFrameId: string; location: { lineNumber: number; columnNumber: number } }[];
}

/** Attaches to `url`, breaks at the TypeScript line, sends a request, and checks where and with what it paused. */
async function breakOnSummary(url: string, subscription: string): Promise<void> {
  const cdp = await connectInspector(url);
  sessions.push(cdp);
  await cdp.send("Debugger.enable");
  const { script, locations } = await setBreakpointInSource(cdp, source, breakLine);
  expect(locations.length).toBe(1); // bound in the running code
  await cdp.send("Runtime.runIfWaitingForDebugger");

  const answer = fetch(`${host.baseUrl}/api/subscriptions/${subscription}/summary`, {
    signal: AbortSignal.timeout(WAIT_MS),
  });
  const paused = await cdp.event<Paused>("Debugger.paused");
  const top = paused.callFrames[0];
  expect(originalPosition(script, top.location)).toEqual({ path: source, line: breakLine });
  const { result } = await cdp.send<{ result: { value: unknown } }>("Debugger.evaluateOnCallFrame", {
    callFrameId: top.callFrameId,
    expression: "request.url",
    returnByValue: true,
  });
  expect(result.value).toBe(`${host.baseUrl}/api/subscriptions/${subscription}/summary`);
  await cdp.send("Debugger.resume");
  const res = await answer;
  expect(res.status).toBe(200);
  expect(((await res.json()) as { subscriptionId: string }).subscriptionId).toBe(subscription);
}

beforeAll(async () => {
  [emu, port] = await Promise.all([startTestEmulator(), freePort(), buildAppFolder(appDir)]).then(
    ([e, p]) => [e, p] as const,
  );
  host = await startAppChild({
    appDir,
    connectionString: emu.emulator.connectionString,
    env: { ...FAST_APP_SETTINGS, languageWorkers__node__arguments: `--inspect=${port}` },
    children,
  });
});

afterAll(async () => {
  for (const s of sessions) s.close();
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await emu?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe("debugging the app's TypeScript through the worker's inspector", () => {
  it("pauses at a breakpoint set by the .ts file and line, with the request in scope", async () => {
    expect(breakLine).toBeGreaterThan(0);
    expect(host.output()).toContain(
      `The worker process starts with node arguments '--inspect=${port}' (languageWorkers__node__arguments).`,
    );
    await breakOnSummary(await inspectorUrl(1), "dbg1");
  });

  it("has the new worker's debugger on the same port after the worker crashed", async () => {
    const first = await connectInspector(await inspectorUrl(1));
    sessions.push(first);
    const { result } = await first.send<{ result: { value: number } }>("Runtime.evaluate", {
      expression: "process.pid",
      returnByValue: true,
    });
    const oldPid = result.value;
    // An uncaught exception in the app, from a timer: the worker logs it and exits 1, as the Node worker does.
    await first.send("Runtime.evaluate", {
      expression: "setTimeout(() => { throw new Error('crash for the debugger test'); }, 0); 1",
    });
    // The worker closes the debugger's connection as it exits (node would wait for the debugger to disconnect).
    await settled("the crashed worker's inspector connection to close", first.closed);
    const url = await inspectorUrl(2);
    expect(url).not.toBe(await inspectorUrl(1));
    expect(host.output()).toContain(`Language Worker Process exited. Pid=${oldPid}.`);
    expect(host.output()).toContain(
      `The debugger port 127.0.0.1:${port} is free (worker process ${oldPid} has exited): the next worker process listens there.`,
    );
    await breakOnSummary(url, "dbg2");
  });
});
