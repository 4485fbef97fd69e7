import { createRequire } from "node:module";
import { CosmosTaskHub } from "/work/main/src/devhost/durable/hub.js";
import { startTestEmulator } from "/work/main/test/support/emulator.js";
const require = createRequire("/work/main/test/durable/hub.test.ts");
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js");
const { InvocationContext } = require("@azure/functions");
const fan = createOrchestrator(function* (ctx: any) {
  const r = yield ctx.df.Task.all(Array.from({ length: 1000 }, (_v, i) => ctx.df.callActivity("double", i)));
  return r.reduce((a: number, b: number) => a + b, 0);
});
const t = await startTestEmulator();
const db = (await t.client.databases.create({ id: "ru" })).database;
const { container } = await db.containers.create({ id: "durable-tasks", partitionKey: { paths: ["/pk"] } });
const { container: leases } = await db.containers.create({ id: "leases", partitionKey: { paths: ["/id"] }, defaultTtl: -1 });
const hub = new CosmosTaskHub({ container, leaseContainer: leases, hubName: "H", log: (l, m) => { if (l !== "trace") console.log(l, m.slice(0, 300)); },
  invokeOrchestrator: async (_n, input) => { try { return { returned: await fan(input, new InvocationContext()) }; } catch (e) { return { thrown: e }; } },
  invokeActivity: async (item) => ({ result: JSON.stringify(JSON.parse(item.input ?? "0") * 2) }) });
await hub.start();
const t0 = Date.now();
const { instanceId } = await hub.startNew("fan", {});
for (let i = 0; i < 100; i++) { const s = await hub.getStatus(instanceId); if (s?.runtimeStatus !== "Running" && s?.runtimeStatus !== "Pending") { console.log(s?.runtimeStatus, s?.output, Date.now() - t0, "ms"); break; } await hub.waitForChange(instanceId, 1000); }
console.log(hub.dispatcher.counters);
await hub.stop(); await t.close();
