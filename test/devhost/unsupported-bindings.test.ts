/**
 * Functions using bindings the dev host cannot serve (blob, queue, Service Bus, table, SQL): one
 * warning per function at start naming them; the function is served, and a call that needs one answers a 500 whose
 * body names the binding and says it is a limit of the dev host — not the host's empty 500 of an app failure.
 * `cosmos-feed start` in process, over real sockets, on the embedded emulator (the durable client's task hub).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LogRecord, StartedApp } from "../../packages/devhost/src/index.js";
import { type InProcessDevHost, startInProcessDevHost } from "../support/dev-host.js";

const scratch = join(fileURLToPath(new URL("../..", import.meta.url)), ".data", "test-apps");
let appDir: string;
let host: InProcessDevHost;
let started: StartedApp;
const logs: LogRecord[] = [];

const APP = `const { app, input, output } = require("@azure/functions");
const df = require("durable-functions");
const blob = input.storageBlob({ path: "samples/{Query.name}", connection: "AzureWebJobsStorage" });
const queue = output.storageQueue({ queueName: "out", connection: "AzureWebJobsStorage" });
const bus = output.serviceBusQueue({ queueName: "orders", connection: "SB" });
const table = input.table({ tableName: "people", connection: "AzureWebJobsStorage" });
app.http("readBlob", { extraInputs: [blob], handler: async (req, context) => ({ body: String(context.extraInputs.get(blob)) }) });
app.http("enqueue", {
  extraOutputs: [queue, bus],
  handler: async (req, context) => {
    if (req.query.get("skip")) return { body: "nothing queued" };
    context.extraOutputs.set(queue, "hello");
    return { body: "queued" };
  },
});
app.http("lookup", { extraInputs: [table], handler: async () => ({ body: "unreachable" }) });
app.http("fails", { handler: async () => { throw new Error("the app's own failure"); } });
app.http("plain", { handler: async () => ({ body: "ok" }) });
df.app.entity("counter", (context) => context.df.setState((context.df.getState(() => 0) ?? 0) + 1));
df.app.client.http("signalCounter", {
  route: "signal",
  handler: async (req, client) => {
    await client.signalEntity(new df.EntityId("counter", "one"), "add", 1);
    return { status: 202 };
  },
});
`;

beforeAll(async () => {
  mkdirSync(scratch, { recursive: true });
  appDir = mkdtempSync(join(scratch, "unsupported-"));
  writeFileSync(join(appDir, "package.json"), JSON.stringify({ main: "index.js" }));
  writeFileSync(
    join(appDir, "host.json"),
    JSON.stringify({
      version: "2.0",
      extensionBundle: { id: "Microsoft.Azure.Functions.ExtensionBundle", version: "[4.*, 5.0.0)" },
    }),
  );
  writeFileSync(join(appDir, "index.js"), APP);
  host = await startInProcessDevHost({
    appDir,
    dataDirPrefix: "unsupported-",
    logSink: (r) => logs.push(r),
  });
  started = host.started;
});

afterAll(async () => {
  await host?.stop();
  if (appDir) rmSync(appDir, { recursive: true, force: true });
});

const get = async (path: string, init?: RequestInit) => {
  const res = await fetch(`${started.host.baseUrl}${path}`, init);
  return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
};
const LIMIT = "a limit of this dev host, not of the app or of Azure Functions";

describe("bindings the dev host cannot serve", () => {
  it("warns once at start per function, naming each binding", () => {
    const warnings = logs.filter((r) => r.level === "warning").map((r) => r.message);
    const about = (fn: string) => warnings.filter((m) => m.startsWith(`The '${fn}' function uses `));
    expect(about("readBlob")).toHaveLength(1);
    expect(about("readBlob")[0]).toMatch(
      /^The 'readBlob' function uses 'blob' input binding 'blobInput\w+', which /,
    );
    expect(about("enqueue")).toHaveLength(1);
    expect(about("enqueue")[0]).toMatch(
      /uses 'queue' output binding 'queueOutput\w+', 'serviceBus' output binding 'serviceBusOutput\w+', which this dev host cannot serve/,
    );
    expect(about("enqueue")[0]).toContain(LIMIT);
    expect(about("lookup")[0]).toMatch(/'table' input binding/);
    for (const served of ["plain", "fails", "signalCounter"]) expect(about(served)).toEqual([]);
    // Durable entities are served (issue 23): no line about the entity function.
    expect(warnings.filter((m) => m.includes("'counter'"))).toEqual([]);
  });

  it("answers a call that needs one with a 500 naming the binding; the function's other paths run", async () => {
    const blob = await get("/api/readBlob?name=a.txt");
    expect(blob.status).toBe(500);
    expect(blob.type).toBe("text/plain; charset=utf-8");
    expect(blob.body).toMatch(
      /^Function 'readBlob' uses the 'blob' input binding 'blobInput\w+', which this dev host cannot serve/,
    );
    expect(blob.body).toContain(LIMIT);
    const queued = await get("/api/enqueue");
    expect(queued.status).toBe(500);
    expect(queued.body).toMatch(/'queue' output binding 'queueOutput\w+'/);
    expect(await get("/api/enqueue?skip=1")).toMatchObject({ status: 200, body: "nothing queued" });
    expect(await get("/api/plain")).toMatchObject({ status: 200, body: "ok" });
    // The app's own failure stays the host's empty 500 (details in the log under the invocation id).
    expect(await get("/api/fails")).toMatchObject({ status: 500, body: "" });
  });

  it("serves a durable entity signal from a starter (entities run on the dev host)", async () => {
    const res = await get("/api/signal", { method: "POST" });
    expect(res.status).toBe(202);
  });
});
