/**
 * A Cosmos DB trigger and bindings that name no `connection`, under extension bundle 4: the 4.x extension reads
 * the setting `CosmosDB` (Constants.DefaultConnectionStringName, DefaultCosmosDBServiceFactory), so the app runs
 * with `CosmosDB` set — over real sockets on the emulator — and, with it unset, the trigger's function is in error
 * naming the setting `CosmosDB` (not "'connection' is required").
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import type { LogRecord, RunningDevHost } from "../../packages/devhost/src/index.js";
import { startCosmosDevHost } from "../support/dev-host.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { scratchApps } from "../support/scratch-apps.js";

const apps = scratchApps("default-connection-");
let emu: TestEmulator;
let running: Awaited<ReturnType<typeof startCosmosDevHost>> | undefined;
let host: RunningDevHost;
const logs: LogRecord[] = [];
const lines = () => logs.map((r) => r.message);
const database = uniqueName("defconn");

const HOST_JSON = JSON.stringify({
  version: "2.0",
  extensionBundle: { id: "Microsoft.Azure.Functions.ExtensionBundle", version: "[4.*, 5.0.0)" },
});

const APP = `const { app, input, output } = require("@azure/functions");
const where = { databaseName: "${database}", containerName: "items" };
const item = input.cosmosDB({ ...where, id: "{id}", partitionKey: "{id}" });
const save = output.cosmosDB({ ...where, createIfNotExists: true, partitionKey: "/id" });
app.cosmosDB("onItem", {
  ...where,
  leaseContainerName: "leases",
  createLeaseContainerIfNotExists: true,
  feedPollDelay: 100,
  handler: (docs, context) => context.log("onItem saw " + docs.map((d) => d.id).join(",")),
});
app.http("readItem", { route: "items/{id}", extraInputs: [item], handler: (req, context) => ({ jsonBody: context.extraInputs.get(item) }) });
app.http("writeItem", {
  methods: ["POST"],
  route: "items",
  extraOutputs: [save],
  handler: async (req, context) => {
    context.extraOutputs.set(save, await req.json());
    return { status: 201 };
  },
});
`;

beforeAll(async () => {
  emu = await startTestEmulator();
  const appDir = apps.write({
    "package.json": JSON.stringify({ main: "index.js" }),
    "host.json": HOST_JSON,
    "index.js": APP,
  });
  const env = { ...process.env, CosmosDB: emu.emulator.connectionString };
  running = await startCosmosDevHost({ appDir, env, logSink: (r) => logs.push(r) });
  host = running.host;
});

afterAll(async () => {
  await running?.close();
  await emu?.close();
  apps.removeAll();
});

describe("Cosmos DB bindings without 'connection' (extension bundle 4)", () => {
  it("use the setting CosmosDB, as the 4.x extension does: write, read and trigger all run", async () => {
    expect(lines().filter((m) => m.includes("is in error"))).toEqual([]);
    const write = await fetch(`${host.baseUrl}/api/items`, {
      method: "POST",
      body: JSON.stringify({ id: "a1", text: "hello" }),
    });
    expect(write.status).toBe(201);
    const read = await fetch(`${host.baseUrl}/api/items/a1`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id: "a1", text: "hello" });
    await waitUntil("onItem to see a1", () => lines().includes("onItem saw a1"));
    // The document is where the setting CosmosDB points.
    const { resource } = await emu.client.database(database).container("items").item("a1", "a1").read();
    expect(resource).toMatchObject({ text: "hello" });
  });
});

describe("with the setting CosmosDB unset", () => {
  const unsetLogs: LogRecord[] = [];
  let unset: Awaited<ReturnType<typeof startCosmosDevHost>> | undefined;
  afterAll(async () => {
    await unset?.close();
  });

  it("puts the trigger's function in error naming the setting CosmosDB", async () => {
    const appDir = apps.write({
      "package.json": JSON.stringify({ main: "index.js" }),
      "host.json": HOST_JSON,
      "index.js": APP,
    });
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.toLowerCase().includes("cosmosdb")) delete env[k];
    unset = await startCosmosDevHost({ appDir, env, logSink: (r) => unsetLogs.push(r) });
    const inError = unsetLogs
      .map((r) => r.message)
      .find((m) => m.startsWith("The 'onItem' function is in error"));
    expect(inError).toContain("Cosmos DB connection 'CosmosDB' does not resolve");
    expect(unsetLogs.some((r) => r.message.includes("'connection' is required"))).toBe(false);
  });
});
