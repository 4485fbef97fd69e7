import { connect, createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { settled, waitUntil } from "../../bench/lib/until.js";
import {
  DevHostError,
  type LogRecord,
  startDevHost,
  type TriggerRunnerFactory,
} from "../../packages/devhost/src/index.js";
import { scratchApps } from "../support/scratch-apps.js";

const cjsApp = fileURLToPath(new URL("../fixtures/app-cjs", import.meta.url));

const apps = scratchApps("app-");
afterAll(() => apps.removeAll());
const appDir = (files: Record<string, string>) => apps.write(files);

async function startError(options: Parameters<typeof startDevHost>[0]): Promise<DevHostError> {
  try {
    const host = await startDevHost({ logSink: () => {}, ...options });
    await host.close();
  } catch (e) {
    if (e instanceof DevHostError) return e;
    throw e;
  }
  throw new Error("the dev host started");
}

describe("dev host lifecycle", () => {
  it("loads a CommonJS app with its own route prefix", async () => {
    const host = await startDevHost({ appDir: cjsApp, port: 0, logSink: () => {} });
    try {
      const res = await fetch(`${host.baseUrl}/v1/ping`);
      expect(await res.json()).toEqual({ pong: true, module: "object", url: `${host.baseUrl}/v1/ping` });
      expect((await fetch(`${host.baseUrl}/api/ping`)).status).toBe(404);
      const removed = await fetch(`${host.baseUrl}/v1/things/0f8fad5b-d9cb-469f-a165-70867728950e`, {
        method: "DELETE",
      });
      expect(removed.status).toBe(204);
      expect(removed.headers.get("x-removed")).toBe("0f8fad5b-d9cb-469f-a165-70867728950e");
    } finally {
      await host.close();
    }
  });

  it("stops gracefully: refuses new connections, finishes in-flight requests, then stops trigger runners", async () => {
    const events: string[] = [];
    const logs: LogRecord[] = [];
    const cosmos: TriggerRunnerFactory = async (fn, context) => {
      events.push(`start ${fn.metadata.name}`);
      // Feed the function one batch as the change feed would: documents as a JSON array.
      const outcome = await context.invoke({
        reason: "New changes on container things",
        inputData: [{ name: fn.triggerName, data: { json: JSON.stringify([{ id: "a" }, { id: "b" }]) } }],
      });
      events.push(`invoked ${outcome.error === undefined ? "ok" : "failed"}`);
      return { stop: async () => void events.push("runner stopped") };
    };
    const host = await startDevHost({
      appDir: cjsApp,
      port: 0,
      logSink: (r) => {
        logs.push(r);
        if (r.message.startsWith("Executed 'Functions.slow' (Succeeded")) events.push("slow executed");
      },
      triggers: { cosmosDBTrigger: cosmos },
    });
    expect(events).toEqual(["start onThing", "invoked ok"]);
    expect(
      logs.some((r) => r.message === "saw 2 documents: a,b" && r.category === "Function.onThing.User"),
    ).toBe(true);

    const slow = fetch(`${host.baseUrl}/v1/slow?ms=400`).then(async (r) => [r.status, await r.text()]);
    // In flight: the host runs it (a fixed pause could end before the request even arrived).
    await waitUntil("the slow invocation to start", () =>
      logs.some((r) => r.message.startsWith("Executing 'Functions.slow'")),
    );
    const closing = host.close().then(() => events.push("closed"));
    await new Promise((r) => setTimeout(r, 50));
    await expect(fetch(`${host.baseUrl}/v1/ping`)).rejects.toThrow();
    expect(await slow).toEqual([200, "slow done"]);
    await closing;
    expect(events.slice(2)).toEqual(["slow executed", "runner stopped", "closed"]);
  });

  it("says when the port is taken", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const e = await startError({ appDir: cjsApp, port });
      expect(e.code).toBe("PortInUse");
      expect(e.message).toBe(
        `Port ${port} is unavailable (in use by another process). Choose another with --port.`,
      );
    } finally {
      blocker.close();
    }
  });

  it("says what to run when the build output is missing, and when no function registers", async () => {
    const unbuilt = appDir({
      "package.json": JSON.stringify({
        main: "dist/src/{index.js,functions/*.js}",
        scripts: { build: "tsc" },
      }),
    });
    const missing = await startError({ appDir: unbuilt, port: 0 });
    expect(missing.code).toBe("BuildOutputMissing");
    expect(missing.message).toContain(`run \`npm run build\` in ${unbuilt}`);

    const empty = appDir({
      "package.json": JSON.stringify({ main: "index.js" }),
      "index.js": "module.exports = {};",
    });
    expect((await startError({ appDir: empty, port: 0 })).code).toBe("NoFunctions");

    const broken = appDir({
      "package.json": JSON.stringify({ main: "index.js" }),
      "index.js": "throw new Error('bad entry');",
    });
    const load = await startError({ appDir: broken, port: 0 });
    expect(load.code).toBe("AppLoad");
    expect(load.message).toContain('Loading entry point "index.js" failed: Error: bad entry');
  });

  it("puts a function whose %SETTING% does not resolve in error and serves the others", async () => {
    const dir = appDir({
      "package.json": JSON.stringify({ main: "index.js" }),
      "index.js": `const { app } = require("@azure/functions");
app.http("fine", { handler: () => ({ body: "fine" }) });
app.http("needsSetting", { route: "%DEVHOST_TEST_UNSET_ROUTE%", handler: () => ({ body: "no" }) });`,
    });
    const logs: LogRecord[] = [];
    const host = await startDevHost({ appDir: dir, port: 0, logSink: (r) => logs.push(r) });
    try {
      expect(await (await fetch(`${host.baseUrl}/api/fine`)).text()).toBe("fine");
      expect(
        logs.find((r) => r.message.startsWith("The 'needsSetting' function is in error"))?.message,
      ).toContain("'%DEVHOST_TEST_UNSET_ROUTE%' does not resolve to a value");
    } finally {
      await host.close();
    }
  });
});

describe("host switches", () => {
  it("skips a function disabled with AzureWebJobs.<name>.Disabled and resolves the durable hub name", async () => {
    const dir = appDir({
      "package.json": JSON.stringify({ main: "index.js" }),
      "host.json": JSON.stringify({ extensions: { durableTask: { hubName: "%DEVHOST_TEST_HUB%" } } }),
      "local.settings.json": JSON.stringify({
        Values: { DEVHOST_TEST_HUB: "fixturehub", "AzureWebJobs.off.Disabled": "true" },
      }),
      "index.js": `const { app } = require("@azure/functions");
app.http("on", { handler: () => ({ body: "on" }) });
app.http("off", { handler: () => ({ body: "off" }) });`,
    });
    const logs: LogRecord[] = [];
    const host = await startDevHost({ appDir: dir, port: 0, logSink: (r) => logs.push(r) });
    try {
      expect(host.app.durableHubName).toBe("fixturehub");
      expect(await (await fetch(`${host.baseUrl}/api/on`)).text()).toBe("on");
      expect((await fetch(`${host.baseUrl}/api/off`)).status).toBe(404);
      expect(logs.some((r) => r.message === "Function 'off' is disabled.")).toBe(true);
    } finally {
      await host.close();
    }
  });
});

describe("client aborts", () => {
  it("a client that goes away mid-body is no invocation and no host error, and the host still stops at once", async () => {
    const logs: LogRecord[] = [];
    const host = await startDevHost({ appDir: cjsApp, port: 0, logSink: (r) => logs.push(r) });
    const socket = connect(host.port, "127.0.0.1");
    await new Promise((r) => socket.once("connect", r));
    socket.write("POST /v1/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\npartial");
    await new Promise((r) => setTimeout(r, 100));
    socket.destroy();
    await new Promise((r) => setTimeout(r, 50));
    // A request left open by its client would keep a graceful stop waiting for ever: close() must settle.
    await settled("host.close() after the client went away", host.close());
    expect(logs.some((r) => r.message.startsWith("Executing 'Functions.ping'"))).toBe(false);
    expect(logs.filter((r) => r.level === "error")).toEqual([]); // an ordinary abort, not a host failure
  });
});
