/**
 * An app written for extension bundle 3 (host.json "[3.*, 4.0.0)", the Cosmos DB extension 3.x names
 * connectionStringSetting, collectionName, leaseCollectionName, createLeaseCollectionIfNotExists, …) runs in the dev
 * host over real sockets on the emulator: its trigger fires, its input binding reads, its output binding writes.
 * Beside it, triggers whose connections fail (wrong key, nothing listening, no setting) are put in error — each line
 * names the function, the setting and the endpoint — while the rest runs. Containers the dev host creates get a
 * partition key it logs, with how to choose another.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import type { LogRecord, RunningDevHost } from "../../packages/devhost/src/index.js";
import { WELL_KNOWN_EMULATOR_KEY } from "../../packages/emulator/src/index.js";
import { startCosmosDevHost } from "../support/dev-host.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

const scratch = join(fileURLToPath(new URL("../..", import.meta.url)), ".data", "test-apps");
let appDir: string;
let emu: TestEmulator;
let host: RunningDevHost;
let running: Awaited<ReturnType<typeof startCosmosDevHost>> | undefined;
const logs: LogRecord[] = [];
const lines = () => logs.map((r) => r.message);

const APP = `const { app, input, output } = require("@azure/functions");
const v3 = { connectionStringSetting: "V3_COSMOS", databaseName: "v3db" };
const item = input.cosmosDB({ ...v3, collectionName: "items", id: "{Query.id}", partitionKey: "{Query.pk}" });
const pkOfItem = input.cosmosDB({ ...v3, collectionName: "items", sqlQuery: "SELECT c.id FROM c WHERE c.pk = {pk}" });
const save = output.cosmosDB({ ...v3, collectionName: "items", createIfNotExists: true, partitionKey: "/pk" });
const note = input.cosmosDB({ ...v3, collectionName: "notes", id: "{Query.id}", partitionKey: "testPartKey" });
const trigger = (name, setting, prefix) =>
  app.cosmosDB(name, {
    connectionStringSetting: setting,
    databaseName: "v3db",
    collectionName: "items",
    leaseCollectionName: "leases3",
    createLeaseCollectionIfNotExists: true,
    leaseCollectionPrefix: prefix,
    feedPollDelay: 100,
    handler: (docs, context) => context.log(name + " saw " + docs.map((d) => d.id).join(",")),
  });
trigger("onItem", "V3_COSMOS", "v3-");
trigger("onWrongKey", "WRONG_KEY_COSMOS", "wrong-");
trigger("onNobodyListens", "UNREACHABLE_COSMOS", "gone-");
trigger("onUnset", "UNSET_COSMOS", "unset-");
app.http("readItem", { extraInputs: [item], handler: async (req, context) => ({ jsonBody: context.extraInputs.get(item) }) });
app.http("itemsIn", { route: "items/{pk}", extraInputs: [pkOfItem], handler: async (req, context) => ({ jsonBody: context.extraInputs.get(pkOfItem) }) });
app.http("readNote", { extraInputs: [note], handler: async (req, context) => ({ jsonBody: context.extraInputs.get(note) ?? "none" }) });
app.http("writeItem", {
  methods: ["POST"],
  extraOutputs: [save],
  handler: async (req, context) => {
    context.extraOutputs.set(save, await req.json());
    return { status: 201 };
  },
});
`;

function writeApp(): string {
  mkdirSync(scratch, { recursive: true });
  const dir = mkdtempSync(join(scratch, "bundle3-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ main: "index.js" }));
  writeFileSync(
    join(dir, "host.json"),
    JSON.stringify({
      version: "2.0",
      extensionBundle: { id: "Microsoft.Azure.Functions.ExtensionBundle", version: "[3.*, 4.0.0)" },
    }),
  );
  writeFileSync(join(dir, "index.js"), APP);
  return dir;
}

beforeAll(async () => {
  emu = await startTestEmulator();
  appDir = writeApp();
  const env = {
    ...process.env,
    V3_COSMOS: emu.emulator.connectionString,
    WRONG_KEY_COSMOS: `AccountEndpoint=${emu.emulator.endpoint};AccountKey=${Buffer.from("not the key").toString("base64")};`,
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    UNREACHABLE_COSMOS: `AccountEndpoint=https://127.0.0.1:1/;AccountKey=${WELL_KNOWN_EMULATOR_KEY};`,
  };
  // The emulator's mode: containers the app names are created when missing (none is defined for this app).
  running = await startCosmosDevHost({ appDir, env, logSink: (r) => logs.push(r) });
  host = running.host;
});

afterAll(async () => {
  await running?.close();
  await emu?.close();
  if (appDir) rmSync(appDir, { recursive: true, force: true });
});

describe("an app on extension bundle 3 (Cosmos DB extension 3.x names)", () => {
  it("runs: the output binding writes, the trigger fires, the input binding reads", async () => {
    const write = await fetch(`${host.baseUrl}/api/writeItem`, {
      method: "POST",
      body: JSON.stringify({ id: "a1", pk: "p1", text: "hello" }),
    });
    expect(write.status).toBe(201);
    await waitUntil("onItem to see a1", () => lines().some((m) => m === "onItem saw a1"));
    const read = await fetch(`${host.baseUrl}/api/readItem?id=a1&pk=p1`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id: "a1", pk: "p1", text: "hello" });
    const query = await fetch(`${host.baseUrl}/api/items/p1`);
    expect(await query.json()).toEqual([{ id: "a1" }]);
    // The lease container the v3 options name, with the v3 prefix.
    const { resources } = await emu.client
      .database("v3db")
      .container("leases3")
      .items.query("SELECT c.id FROM c WHERE STARTSWITH(c.id, 'v3-')")
      .fetchAll();
    expect(resources.length).toBeGreaterThan(0);
  });

  it("puts each trigger whose connection fails in error, naming the function, the setting and the endpoint; the rest runs", () => {
    const inError = (name: string) =>
      lines().find((m) => m.startsWith(`The '${name}' function is in error: `)) ?? "";
    expect(inError("onWrongKey")).toContain(
      `Cosmos DB connection 'WRONG_KEY_COSMOS' (${emu.emulator.endpoint}, key from setting WRONG_KEY_COSMOS) refused the credentials (HTTP 401)`,
    );
    expect(inError("onNobodyListens")).toContain(
      "Cosmos DB connection 'UNREACHABLE_COSMOS' (https://127.0.0.1:1/, key from setting UNREACHABLE_COSMOS) is unreachable (ECONNREFUSED)",
    );
    expect(inError("onUnset")).toContain("Cosmos DB connection 'UNSET_COSMOS' does not resolve");
    expect(inError("onItem")).toBe("");
    expect(lines()).toContain("Job host started");
  });

  it("logs the partition key of each container it creates, and how to choose another", async () => {
    // The monitored container: the path of the app's output binding on it.
    expect(lines()).toContain(
      "Created container 'v3db/items' (monitored by function 'onItem'; partition key /pk, from the partitionKey of function 'writeItem''s cosmosDB output binding; to choose another, define the container in a container definitions file (--containers <file>; default src/shared/containers.json) or create it before starting).",
    );
    const { resource } = await emu.client.database("v3db").container("items").read();
    expect(resource?.partitionKey?.paths).toEqual(["/pk"]);
    // A container only an input binding names is not created (the extension creates none for an input binding):
    // the read fails, as on the host.
    const res = await fetch(`${host.baseUrl}/api/readNote?id=n1`);
    expect(res.status).toBe(500);
    expect(lines().some((m) => m.startsWith("Created container 'v3db/notes'"))).toBe(false);
  });
});
