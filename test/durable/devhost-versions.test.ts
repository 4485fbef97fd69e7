/**
 * Two things a Durable app sees on the Functions host, over real sockets on the dev host:
 * - versions: host.json `extensions.durableTask.defaultVersion` is the version of an instance started without one and
 *   of a sub-orchestration called without one; `startNew(name, { version })` and `callSubOrchestrator(…, version)`
 *   choose another; a continue-as-new keeps it; `context.df.version` reads it (it used to be "" always);
 * - a start whose input is over DURABLE_MAX_PAYLOAD_BYTES (the extension stores larger ones): the app's starter fails
 *   on the durable client's refusal and its caller gets a 500 whose body says why and that it is a limit of the dev
 *   host (it used to be the host's empty 500, the reason only in the log).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { type InProcessDevHost, startInProcessDevHost } from "../support/dev-host.js";
import { scratchApps } from "../support/scratch-apps.js";

const apps = scratchApps("durable-versions-");
let host: InProcessDevHost;
let base: string;

const APP = `const { app } = require("@azure/functions");
const df = require("durable-functions");
df.app.orchestration("child", function* (context) {
  return context.df.version;
});
df.app.orchestration("versioned", function* (context) {
  const previous = context.df.getInput();
  if (!previous) {
    const inherited = yield context.df.callSubOrchestrator("child");
    const chosen = yield context.df.callSubOrchestrator("child", undefined, undefined, "3.0");
    context.df.continueAsNew({ first: context.df.version, inherited, chosen });
    return;
  }
  return { first: previous, afterContinueAsNew: context.df.version };
});
df.app.orchestration("echo", function* (context) {
  return context.df.getInput().length;
});
app.http("start", {
  route: "start/{name}",
  methods: ["POST"],
  extraInputs: [df.input.durableClient()],
  handler: async (request, context) => {
    const client = df.getClient(context);
    const version = request.query.get("version") || undefined;
    const text = await request.text();
    const id = await client.startNew(request.params.name, { input: text ? JSON.parse(text) : undefined, version });
    return { jsonBody: { id } };
  },
});
`;

beforeAll(async () => {
  const appDir = apps.write({
    "package.json": JSON.stringify({ main: "index.js" }),
    "host.json": JSON.stringify({
      version: "2.0",
      extensions: { durableTask: { hubName: "VersionsHub", defaultVersion: "1.0" } },
    }),
    "index.js": APP,
  });
  host = await startInProcessDevHost({ appDir, dataDirPrefix: "durable-versions-" });
  base = host.started.host.baseUrl;
});

afterAll(async () => {
  await host?.stop();
  apps.removeAll();
});

async function run(path: string, body?: string): Promise<unknown> {
  const res = await fetch(`${base}/api/start/${path}`, { method: "POST", ...(body ? { body } : {}) });
  expect(res.status).toBe(200);
  const { id } = (await res.json()) as { id: string };
  return until(`instance ${id} completes`, async () => {
    const s = await fetch(`${base}/runtime/webhooks/durabletask/instances/${id}`);
    const status = (await s.json()) as { runtimeStatus: string; output: unknown };
    if (status.runtimeStatus === "Failed") throw new Error(JSON.stringify(status));
    return status.runtimeStatus === "Completed" ? status.output : undefined;
  });
}

describe("orchestration versions", () => {
  it("host.json's defaultVersion: the instance's, an unversioned sub-orchestration's, after continue-as-new", async () => {
    expect(await run("versioned")).toEqual({
      first: { first: "1.0", inherited: "1.0", chosen: "3.0" },
      afterContinueAsNew: "1.0",
    });
  });

  it("startNew's version wins for the instance; a sub-orchestration without one still gets the default", async () => {
    expect(await run("versioned?version=2.0")).toEqual({
      first: { first: "2.0", inherited: "1.0", chosen: "3.0" },
      afterContinueAsNew: "2.0",
    });
  });
});

describe("a start input over DURABLE_MAX_PAYLOAD_BYTES", () => {
  it("the starter's caller gets a 500 that says why, and that it is the dev host's limit", async () => {
    const big = JSON.stringify("x".repeat(300_000));
    const res = await fetch(`${base}/api/start/echo`, { method: "POST", body: big });
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    const text = await res.text();
    expect(text).toContain(
      "The orchestration input is 300002 bytes; the task hub stores at most 262144 (DURABLE_MAX_PAYLOAD_BYTES).",
    );
    expect(text).toContain("a limit of this dev host");
    // Under the limit it runs.
    expect(await run("echo", JSON.stringify("x".repeat(1000)))).toBe(1000);
  });
});
