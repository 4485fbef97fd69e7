/**
 * An app whose only Cosmos DB use is an input binding (no trigger — as the Azure Functions docs' cosmosInput
 * samples): the container the dev host creates on the emulator at the first read is logged with its partition key
 * and how to choose another. The log line used to be lost: the bindings only logged once a Cosmos DB trigger had
 * started.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LogRecord, RunningDevHost } from "../../src/devhost/index.js";
import { startCosmosDevHost } from "../support/dev-host.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import { scratchApps } from "../support/scratch-apps.js";

const apps = scratchApps("bindings-log-");
let emu: TestEmulator;
let host: RunningDevHost;
let running: Awaited<ReturnType<typeof startCosmosDevHost>> | undefined;
const logs: LogRecord[] = [];

const APP = `const { app, input } = require("@azure/functions");
const item = input.cosmosDB({ connection: "ONLY_COSMOS", databaseName: "todo", containerName: "items", id: "{id}", partitionKey: "{id}" });
app.http("readItem", { route: "items/{id}", extraInputs: [item], handler: (req, context) => ({ jsonBody: context.extraInputs.get(item) ?? "none" }) });
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

describe("containers created for an app without a Cosmos DB trigger", () => {
  it("are logged with their partition key and how to choose another", async () => {
    const res = await fetch(`${host.baseUrl}/api/items/a1`);
    expect(res.status).toBe(200);
    expect(await res.json()).toBe("none");
    const created = logs.filter((r) => r.message.startsWith("Created "));
    expect(created.map((r) => r.message)).toEqual([
      "Created database 'todo' (read by a cosmosDB input binding).",
      "Created container 'todo/items' (read by a cosmosDB input binding; partition key /id, from the dev host's default: the app defines no partition key for it; to choose another, define the container in a container definitions file (--containers <file>; default src/shared/containers.json) or create it before starting).",
    ]);
    const { resource } = await emu.client.database("todo").container("items").read();
    expect(resource?.partitionKey?.paths).toEqual(["/id"]);
  });
});
