/**
 * A cosmosDB input binding on a container that does not exist fails the invocation, as the Functions host does
 * (the extension never creates a container for an input binding: CosmosDBAttribute.CreateIfNotExists "only applies
 * to output bindings") — on the emulator too. It used to create the database and container and read `null` / `[]`.
 * The app has no Cosmos DB trigger (as the Azure Functions docs' cosmosInput samples), so nothing else creates them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LogRecord, RunningDevHost } from "../../packages/devhost/src/index.js";
import { startCosmosDevHost } from "../support/dev-host.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import { scratchApps } from "../support/scratch-apps.js";

const apps = scratchApps("bindings-log-");
let emu: TestEmulator;
let host: RunningDevHost;
let running: Awaited<ReturnType<typeof startCosmosDevHost>> | undefined;
const logs: LogRecord[] = [];

const APP = `const { app, input } = require("@azure/functions");
const where = { connection: "ONLY_COSMOS", databaseName: "todo", containerName: "items" };
const item = input.cosmosDB({ ...where, id: "{id}", partitionKey: "{id}" });
const all = input.cosmosDB({ ...where, sqlQuery: "SELECT * FROM c" });
app.http("readItem", { route: "items/{id}", extraInputs: [item], handler: (req, context) => ({ jsonBody: context.extraInputs.get(item) ?? "none" }) });
app.http("listItems", { route: "items", extraInputs: [all], handler: (req, context) => ({ jsonBody: context.extraInputs.get(all) }) });
`;

beforeAll(async () => {
  emu = await startTestEmulator();
  const appDir = apps.write({ "package.json": JSON.stringify({ main: "index.js" }), "index.js": APP });
  const env = { ...process.env, ONLY_COSMOS: emu.emulator.connectionString };
  running = await startCosmosDevHost({ appDir, env, logSink: (r) => logs.push(r) });
  host = running.host;
});

afterAll(async () => {
  await running?.close();
  await emu?.close();
  apps.removeAll();
});

describe("an input binding on a container that does not exist", () => {
  it.each([
    ["by id", "/api/items/a1", "readItem"],
    ["by query", "/api/items", "listItems"],
  ])("%s: the invocation fails (the host's empty 500), the error names the container", async (_, path, fn) => {
    const res = await fetch(`${host.baseUrl}${path}`);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("");
    const failure = logs.find(
      (r) =>
        r.message.startsWith(`Exception while executing function: Functions.${fn}.`) && r.level === "error",
    );
    expect(failure?.message).toContain("The container 'items' (in database 'todo') does not exist.");
  });

  it("creates neither the database nor the container", async () => {
    expect(logs.filter((r) => r.message.startsWith("Created "))).toEqual([]);
    const { resources } = await emu.client.databases.readAll().fetchAll();
    expect(resources.map((d) => d.id)).not.toContain("todo");
  });
});
