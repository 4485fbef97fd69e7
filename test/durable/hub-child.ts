/**
 * A task hub host in its own process, for hub-kill.test.ts (killed with SIGKILL, then started again):
 *
 *   node --import tsx test/durable/hub-child.ts '<HubChildConfig as JSON>'
 *
 * It runs two real durable-functions orchestrators: `fanOut` (Task.all over `n` activities `double(i)`, returns
 * the sum) and `chain` (one activity `step(g)` per generation, then continue-as-new until generation `last`; returns
 * the generation count and the sum of the steps); and the `counter` entity with its `signaller` orchestration
 * (ordered-counter.ts, for the entities' exactly-once test). Every activity appends a JSON line to `logFile` with a synchronous
 * write when it starts ({"a":"double","i":…} / {"a":"step","g":…}), so the test sees the progress of the work.
 *
 * With `holdFanAfter` / `holdChainAt`, activities past that point never return (this process is killed in the
 * middle of the work): `double` once that many have started, `step` from that generation on. With `holdBatchesOf`,
 * the commits of that instance stop after their first transactional batch (killed in the middle of a commit). The parent is told
 * {"ready":true} over IPC once the hub started; the process exits when the parent goes away.
 */
import { appendFileSync, openSync } from "node:fs";
import { CosmosClient } from "@azure/cosmos";
import { faultPlugins } from "../support/faults.js";
import { createHub, type Gen } from "./hub-harness.js";
import { invokeCounter, signaller } from "./ordered-counter.js";

export interface HubChildConfig {
  endpoint: string;
  key: string;
  databaseId: string;
  containerId: string;
  leaseId: string;
  hubName: string;
  instanceName: string;
  logFile: string;
  holdFanAfter?: number;
  holdChainAt?: number;
  /** Activity slots (the held activities must not take them all: the other orchestration needs some). */
  maxConcurrentActivities?: number;
  /**
   * Holds this host in the middle of a commit: the first transactional batch on the partition of this instance is
   * sent, every later one is held forever (logged once as {"a":"held-batch"}), as if the process died between them.
   */
  holdBatchesOf?: string;
}

export interface ChainInput {
  generation: number;
  last: number;
  total: number;
}

const config = JSON.parse(process.argv[2] ?? "{}") as HubChildConfig;
const fd = openSync(config.logFile, "a");
const log = (line: object) => appendFileSync(fd, `${JSON.stringify(line)}\n`);
const never = () => new Promise<never>(() => {});

const orchestrators: Record<string, Gen> = {
  fanOut: function* (ctx) {
    // `n`, or `{ n, pad }`: each activity's input then carries `pad` bytes (a fan-out too large for one batch).
    const input = ctx.df.getInput() as number | { n: number; pad: number };
    const n = typeof input === "number" ? input : input.n;
    const pad = typeof input === "number" ? "" : "x".repeat(input.pad);
    const results = (yield ctx.df.Task.all(
      Array.from({ length: n }, (_v, i) => ctx.df.callActivity("double", pad ? { i, pad } : i)),
    )) as number[];
    return results.reduce((x, y) => x + y, 0);
  },
  chain: function* (ctx) {
    const input = ctx.df.getInput() as ChainInput;
    const total = input.total + ((yield ctx.df.callActivity("step", input.generation)) as number);
    if (input.generation < input.last) {
      ctx.df.continueAsNew({ generation: input.generation + 1, last: input.last, total });
      return null;
    }
    return { generations: input.generation, total };
  },
  signaller,
};

let doubles = 0;
const activities = {
  double: async (input: unknown) => {
    const i = typeof input === "object" && input !== null ? (input as { i: number }).i : input;
    doubles++;
    log({ a: "double", i });
    if (config.holdFanAfter !== undefined && doubles > config.holdFanAfter) await never();
    return (i as number) * 2;
  },
  step: async (g: unknown) => {
    log({ a: "step", g });
    if (config.holdChainAt !== undefined && (g as number) >= config.holdChainAt) await never();
    return g as number;
  },
};

let batchesOfHeld = 0;
const holdCommit = config.holdBatchesOf
  ? faultPlugins({
      match: (ctx) =>
        ctx.operationType === "batch" &&
        JSON.stringify(ctx.partitionKey ?? null).includes(config.holdBatchesOf as string),
      run: async (_ctx, next) => {
        batchesOfHeld++;
        if (batchesOfHeld === 1) return next();
        if (batchesOfHeld === 2) log({ a: "held-batch" });
        return never();
      },
    })
  : {};
const client = new CosmosClient({ endpoint: config.endpoint, key: config.key, ...holdCommit });
const database = client.database(config.databaseId);
const diagnostics: string[] = [];
const hub = createHub({
  container: database.container(config.containerId),
  leaseContainer: database.container(config.leaseId),
  hubName: config.hubName,
  instanceName: config.instanceName,
  orchestrators,
  activities,
  log: diagnostics,
  options: {
    invokeEntity: invokeCounter,
    ...(config.maxConcurrentActivities ? { maxConcurrentActivities: config.maxConcurrentActivities } : {}),
  },
});
setInterval(() => {
  for (const line of diagnostics.splice(0)) {
    if (!line.startsWith("debug")) process.stderr.write(`[${config.instanceName}] ${line}\n`);
  }
}, 500).unref();
process.on("disconnect", () => process.exit(1));
await hub.start();
process.send?.({ ready: true });
