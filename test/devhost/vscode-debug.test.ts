import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { type LogRecord, startFromCommandLine } from "../../packages/devhost/src/index.js";
import { DEFAULT_INSPECTOR, workerNodeArguments } from "../../packages/devhost/src/worker/node-arguments.js";
import { freePort } from "../support/free-port.js";
import { scratchApps } from "../support/scratch-apps.js";
import { repoRoot } from "../support/start-cli.js";

// The template's .vscode/launch.json and tasks.json, as the Azure Functions VS Code extension writes them for a
// Node project ("Attach to Node Functions" on 9229 after a background host-start task): the task runs an npm
// script that exists and opens the worker's debugger on the port launch.json attaches to, and its background
// problem matcher recognises the dev host's own lines — ready after the worker's debugger listens, busy again on a
// restart, ready again after it.

const read = <T>(path: string): T => JSON.parse(readFileSync(join(repoRoot, path), "utf8")) as T;
interface Launch {
  configurations: {
    name: string;
    type: string;
    request: string;
    restart?: boolean;
    port: number;
    preLaunchTask: string;
  }[];
}
interface Task {
  label: string;
  type: string;
  script?: string;
  isBackground?: boolean;
  problemMatcher?: {
    base?: string;
    background: { activeOnStart: boolean; beginsPattern: string; endsPattern: string };
  };
}
const launch = read<Launch>(".vscode/launch.json");
const tasks = read<{ tasks: Task[] }>(".vscode/tasks.json").tasks;
const scripts = read<{ scripts: Record<string, string> }>("package.json").scripts;
const attach = launch.configurations.find((c) => c.name === "Attach to Node Functions");
const hostTask = tasks.find((t) => t.label === attach?.preLaunchTask);

const apps = scratchApps("vscode-");
const dataDir = mkdtempSync(join(tmpdir(), "vscode-data-"));
afterAll(() => {
  apps.removeAll();
  rmSync(dataDir, { recursive: true, force: true });
});

describe(".vscode: attach to the worker's debugger after the dev host started", () => {
  it("attaches (restart: true) to the port the npm script's --inspect opens", () => {
    expect(attach).toMatchObject({ type: "node", request: "attach", restart: true, port: 9229 });
    expect(hostTask).toMatchObject({ type: "npm", isBackground: true });
    // Not "func: host start": the Functions extension would take it for Core Tools' task and check for `func`.
    expect(hostTask?.label).not.toMatch(/^(func: )?host start$/i);
    const script = scripts[hostTask?.script ?? ""];
    expect(script).toBe("cosmos-feed start . --inspect --watch");
    expect(workerNodeArguments({}, true)?.inspector).toEqual(DEFAULT_INSPECTOR);
    expect(DEFAULT_INSPECTOR.port).toBe(attach?.port);
  });

  it("has a problem matcher that sees the dev host ready once the debugger listens, and again after a restart", async () => {
    const background = hostTask?.problemMatcher?.background;
    expect(background?.activeOnStart).toBe(true);
    const begins = new RegExp(background?.beginsPattern ?? "^$");
    const ends = new RegExp(background?.endsPattern ?? "^$");
    // The lines as the terminal shows them (Core Tools' `[time] message`, what consoleSink writes).
    const lines: string[] = [];
    const port = await freePort();
    const logs: LogRecord[] = [];
    const started = await startFromCommandLine({
      appDir: apps.write({
        "package.json": JSON.stringify({ name: "vscode", type: "module", main: "src/*.js" }),
        "host.json": JSON.stringify({ version: "2.0" }),
        "src/app.js": `import { app } from "@azure/functions";\napp.http("hi", { handler: async () => ({ body: "hi" }) });`,
      }),
      port: 0,
      cosmos: "emulator",
      emulatorPort: 0,
      dataDir,
      build: false,
      inspect: String(port),
      env: { ...process.env },
      logSink: (r) => {
        logs.push(r);
        lines.push(`[${r.time.toISOString()}] ${r.message}`);
      },
    });
    try {
      const listening = (n: number) =>
        until(`debugger ${n}`, async () => {
          const at = lines
            .map((l, i) => (l.includes("Debugger listening on ws://") ? i : -1))
            .filter((i) => i >= 0);
          return at[n - 1];
        });
      const firstDebugger = await listening(1);
      const firstReady = lines.findIndex((l) => ends.test(l));
      expect(firstReady).toBeGreaterThan(firstDebugger);
      expect(lines.slice(0, firstReady).some((l) => begins.test(l))).toBe(false);

      const before = lines.length;
      await started.restart();
      const busy = lines.findIndex((l, i) => i >= before && begins.test(l));
      expect(lines[busy]).toMatch(/Restarting host\.$/);
      const secondDebugger = await listening(2);
      const ready = lines.findIndex((l, i) => i > busy && ends.test(l));
      expect(ready).toBeGreaterThan(secondDebugger);
    } finally {
      await started.stop();
    }
  });
});
