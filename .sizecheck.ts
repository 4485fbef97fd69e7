import { createRequire } from "node:module";
import { CosmosTaskHub } from "/work/main/src/devhost/durable/hub.js";
import { startTestEmulator } from "/work/main/test/support/emulator.js";
import containers from "/work/main/src/shared/containers.json" with { type: "json" };
const require = createRequire("/work/main/test/durable/hub.test.ts");
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js");
const { InvocationContext } = require("@azure/functions");
const seq = createOrchestrator(function* (ctx: any) {
  const a = yield ctx.df.callActivity("double", 1);
  const b = yield ctx.df.callActivity("double", a);
  return yield ctx.df.callActivity("double", b);
});
const t = await startTestEmulator();
const db = (await t.client.databases.create({ id: "ru" })).database;
const def = (containers as any).containers.find((c: any) => c.role === "durable");
const { container } = await db.containers.create({ id: "durable-tasks", partitionKey: { paths: ["/pk"] }, indexingPolicy: def.indexingPolicy });
const { container: leases } = await db.containers.create({ id: "leases", partitionKey: { paths: ["/id"] }, defaultTtl: -1 });
const sizes: string[] = [];
const orig = container.items.batch.bind(container.items);
(container.items as any).batch = async (ops: any[], pk: any) => { const r = await orig(ops, pk); sizes.push(ops.map((o) => `${o.operationType}:${o.resourceBody ? JSON.stringify(o.resourceBody).length : 0}`).join(" ") + ` => ${r.result?.map((x: any) => x.requestCharge).join("+")}`); return r; };
const hub = new CosmosTaskHub({ container, leaseContainer: leases, hubName: "H",
  invokeOrchestrator: async (_n, input) => { try { return { returned: await seq(input, new InvocationContext()) }; } catch (e) { return { thrown: e }; } },
  invokeActivity: async (item) => ({ result: JSON.stringify(JSON.parse(item.input ?? "0") * 2) }) });
await hub.start();
const { instanceId } = await hub.startNew("seq", {});
for (;;) { const s = await hub.getStatus(instanceId); if (s?.runtimeStatus === "Completed") break; await hub.waitForChange(instanceId, 5000); }
console.log(sizes.join("\n"));
await hub.stop(); await t.close();
