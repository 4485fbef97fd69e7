import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  DevHostError,
  type LogRecord,
  type StartCommandOptions,
  startFromCommandLine,
} from "../../packages/devhost/src/index.js";
import { copyFixture, removeScratch, repoRoot, scratchDir } from "../support/start-cli.js";

afterAll(removeScratch);

const APP = join(repoRoot, "test", "fixtures", "app-cjs");

/** `cosmos-feed start` in this process: any free ports, a fresh data folder, no build, the logs kept. */
function options(overrides: StartCommandOptions, logs: LogRecord[] = []): StartCommandOptions {
  return {
    appDir: APP,
    port: 0,
    emulatorPort: 0,
    dataDir: scratchDir("messages-data-"),
    build: false,
    env: { ...process.env, FIXTURE_COSMOS: "" },
    logSink: (r) => logs.push(r),
    ...overrides,
  };
}

async function startError(o: StartCommandOptions): Promise<DevHostError> {
  try {
    const started = await startFromCommandLine(o);
    await started.stop();
  } catch (e) {
    if (e instanceof DevHostError) return e;
    throw e;
  }
  throw new Error("it started");
}

describe("cosmos-feed start says what tools wait for, in Core Tools' words", () => {
  it("prints the start-up lines in Core Tools' order, the dashboard URL, and the host lock line last", async () => {
    const logs: LogRecord[] = [];
    const started = await startFromCommandLine(options({}, logs));
    try {
      const messages = logs.map((r) => r.message);
      const at = (re: RegExp) => messages.findIndex((m) => re.test(m));
      const order = [
        /^Worker process started and initialized\.$/,
        /^Functions:\n/,
        /^Host started \(\d+ms\)$/,
        /^Job host started$/,
        new RegExp(`^Dashboard: ${started.host.baseUrl}/_dev$`),
        /^Host lock lease acquired by instance ID '[0-9A-F]{32}'\.$/,
      ].map(at);
      expect(order.every((i) => i >= 0)).toBe(true);
      expect(order).toEqual([...order].sort((a, b) => a - b));
      expect(order.at(-1)).toBe(messages.length - 1);
      expect(logs.at(-1)?.category).toBe("Host.General");
      expect((await fetch(`${started.host.baseUrl}/_dev`)).status).toBe(200);
    } finally {
      await started.stop();
    }
  });
});

describe("cosmos-feed start's advice names the fix for `start`", () => {
  it("a folder without host.json or local.settings.json: Core Tools' sentence", async () => {
    const dir = scratchDir("no-root-");
    writeFileSync(join(dir, "package.json"), JSON.stringify({ main: "index.js" }));
    const e = await startError(options({ appDir: dir }));
    expect(e.code).toBe("ProjectRootMissing");
    expect(e.message).toBe(
      `Unable to find project root. Expecting to find one of host.json, local.settings.json in project root (${dir}).`,
    );
  });

  it("the emulator's port taken: --emulator-port, not --port", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const e = await startError(options({ emulatorPort: port }));
      expect(e.code).toBe("EmulatorPortInUse");
      expect(e.message).toBe(
        `Port ${port} on 127.0.0.1 (the embedded Cosmos DB emulator's) is already in use: choose another with --emulator-port <n> (or --emulator-port 0 for any free port).`,
      );
    } finally {
      blocker.close();
    }
  });

  it("emulator data that cannot be opened: move or delete the folder, or another --data-dir", async () => {
    const dataDir = scratchDir("corrupt-data-");
    writeFileSync(join(dataDir, "cosmos-emulator.sqlite"), "this is not a SQLite database ".repeat(100));
    const e = await startError(options({ dataDir }));
    expect(e.code).toBe("EmulatorDataUnusable");
    expect(e.message).toMatch(
      new RegExp(
        `^The emulator's data in '${dataDir}' cannot be opened \\(SQLITE_NOTADB: file is not a database\\): move or delete that folder \\(the emulator then starts empty\\), or use another with --data-dir <dir>\\.$`,
      ),
    );
    expect(e.message).not.toContain("leave --data-dir out");
  });
});

describe("timer statuses", () => {
  it("are kept under --data-dir (timers/), not in the app folder", async () => {
    const app = copyFixture("app-cjs");
    mkdirSync(join(app, "lib"), { recursive: true });
    writeFileSync(
      join(app, "lib", "daily.js"),
      `require("@azure/functions").app.timer("daily", { schedule: "0 0 3 * * *", handler: () => {} });`,
    );
    const dataDir = scratchDir("timer-data-");
    const started = await startFromCommandLine(options({ appDir: app, dataDir }));
    try {
      expect(readdirSync(join(dataDir, "timers"))).toEqual(["daily.status.json"]);
      expect(existsSync(join(app, ".data", "timers"))).toBe(false);
    } finally {
      await started.stop();
    }
  });
});
