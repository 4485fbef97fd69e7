import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { createCosmosRuntime } from "../../packages/devhost/src/builtinCosmos.js";
import { type LogRecord, type RunningDevHost, startDevHost } from "../../packages/devhost/src/index.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

const cjsApp = fileURLToPath(new URL("../fixtures/app-cjs", import.meta.url));
let emu: TestEmulator;
let host: RunningDevHost;
// The monitored container does not exist: the trigger creates it from this definition (TTL marks it as ours).
const cosmos = createCosmosRuntime({
  createMissing: () => true,
  containerDefinition: (db, name) =>
    db === "fixture" && name === "things"
      ? { partitionKey: { paths: ["/id"] }, defaultTtl: 3600 }
      : undefined,
});
const logs: LogRecord[] = [];

beforeAll(async () => {
  emu = await startTestEmulator();
  process.env.FIXTURE_COSMOS = emu.emulator.connectionString;
  host = await startDevHost({
    appDir: cjsApp,
    port: 0,
    logSink: (r) => logs.push(r),
    triggers: { cosmosDBTrigger: cosmos.cosmosDBTrigger },
    extensions: cosmos.extensions,
  });
  await emu.client.database("fixture").container("things").items.create({ id: "t1", color: "blue" });
});

afterAll(async () => {
  await host?.close();
  cosmos.dispose();
  await emu?.close();
});

describe("built-in Cosmos DB trigger and bindings wired into the dev host", () => {
  it("creates a missing monitored container from the app's definition", async () => {
    const { resource } = await emu.client.database("fixture").container("things").read();
    expect(resource?.defaultTtl).toBe(3600);
  });

  it("runs the cosmosDBTrigger through the worker contract (documents as typed data)", async () => {
    const seen = await until("the trigger", () =>
      logs.find((r) => r.category === "Function.onThing.User" && /^saw \d+ documents: /.test(r.message)),
    );
    expect(seen.message).toBe("saw 1 documents: t1");
    const executing = logs.find((r) =>
      r.message.startsWith("Executing 'Functions.onThing' (Reason='New changes on container things"),
    );
    expect(executing?.invocationId).toBe(seen.invocationId);
  });

  it("reads the input binding by route id and writes the output binding", async () => {
    const res = await fetch(`${host.baseUrl}/v1/things/t1`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: "t1", color: "blue" });
    const audit = emu.client.database("fixture").container("audit");
    const { resources } = await audit.items.query("SELECT * FROM c WHERE c.read = true").fetchAll();
    expect(resources).toHaveLength(1);
  });
});
