/**
 * A change feed processor host in its own process, for the chaos test (test/chaos/changefeed-chaos.test.ts).
 *
 *   node --import tsx test/support/processor-child.ts '<ProcessorChildConfig as JSON>'
 *
 * The handler appends one JSON line per document to `logFile` with a synchronous write, so every line
 * written before the handler returned survives a `kill -9`. Lines are `{"id","pk","n","host","t","lease",
 * "worker"}` (see HandledLine): `t` is `process.hrtime.bigint()` (CLOCK_MONOTONIC: one clock for every
 * process of the machine) as a decimal string, so lines of different host processes can be put in one
 * global handling order.
 *
 * Diagnostics (lease events, errors) go to stderr; the parent is told `{"ready":true}` over the IPC channel
 * once the processor started. SIGTERM stops the processor gracefully (releases its leases) and exits 0.
 * The process exits on its own when the parent goes away (IPC disconnect), so it never outlives the test.
 *
 * For the local-deadline test (test/chaos/changefeed-deadline.test.ts): with `holdBatches` the handler keeps
 * each batch until its `ctx.signal` aborts and logs `holding <lease>` / `signal <lease> aborted at <t>`; with
 * `cutLeaseWritesOnSigusr2`, SIGUSR2 makes every later lease-container write of this host fail with an injected
 * 503 (a fault in the SDK's request pipeline: the host can still read the feed, it just cannot renew). Lease
 * events are logged with `at <t>` (the same CLOCK_MONOTONIC as the handling log) so hosts can be ordered.
 */
import { appendFileSync, closeSync, openSync } from "node:fs";
import { CosmosClient, type CosmosClientOptions } from "@azure/cosmos";
import { createChangeFeedProcessor } from "../../packages/changefeed/src/processor.js";
import { faultPlugins, serviceError } from "./faults.js";

export interface ProcessorChildConfig {
  endpoint: string;
  key: string;
  databaseId: string;
  monitoredId: string;
  leaseId: string;
  instanceName: string;
  logFile: string;
  leaseRenewInterval: number;
  leaseAcquireInterval: number;
  leaseExpirationInterval: number;
  feedPollDelay: number;
  leaseSafetyMargin?: number;
  maxItemsPerInvocation?: number;
  handoffTimeout?: number;
  holdBatches?: boolean;
  cutLeaseWritesOnSigusr2?: boolean;
  /** The SDK's per-request timeout (ms; its default is 60 s), for tests that bound how long a lost request stalls. */
  requestTimeoutMs?: number;
}

/** One line of a host's handling log. */
export interface HandledLine {
  id: string;
  pk: string;
  n: number;
  host: string;
  /** process.hrtime.bigint() when the document was handled, as a decimal string (ns). */
  t: string;
  /** The lease the batch came from. */
  lease: string;
  /** Which worker of this process handled it (one per lease acquisition: each has its own AbortSignal). */
  worker: number;
}

interface Doc {
  id: string;
  pk: string;
  n: number;
}

const config = JSON.parse(process.argv[2] ?? "{}") as ProcessorChildConfig;
const name = config.instanceName;
const log = (message: string) => process.stderr.write(`[${name} pid ${process.pid}] ${message}\n`);

const now = () => process.hrtime.bigint().toString();
const fd = openSync(config.logFile, "a");
let leaseWritesCut = false;
const faults: Partial<CosmosClientOptions> = config.cutLeaseWritesOnSigusr2
  ? faultPlugins({
      match: (ctx) =>
        leaseWritesCut &&
        ctx.method !== "GET" &&
        decodeURIComponent(ctx.path ?? "").includes(`/colls/${config.leaseId}/docs`),
      run: async () => {
        throw serviceError(503);
      },
    })
  : {};
if (config.cutLeaseWritesOnSigusr2) {
  process.on("SIGUSR2", () => {
    leaseWritesCut = true;
    log(`lease writes cut at ${now()}`);
  });
}
const client = new CosmosClient({
  endpoint: config.endpoint,
  key: config.key,
  ...faults,
  ...(config.requestTimeoutMs ? { connectionPolicy: { requestTimeout: config.requestTimeoutMs } } : {}),
});
const database = client.database(config.databaseId);

const workers = new Map<AbortSignal, number>();
const processor = createChangeFeedProcessor<Doc>(
  {
    monitoredContainer: database.container(config.monitoredId),
    leaseContainer: database.container(config.leaseId),
    instanceName: name,
    startFromBeginning: true,
    leaseRenewInterval: config.leaseRenewInterval,
    leaseAcquireInterval: config.leaseAcquireInterval,
    leaseExpirationInterval: config.leaseExpirationInterval,
    feedPollDelay: config.feedPollDelay,
    leaseSafetyMargin: config.leaseSafetyMargin,
    maxItemsPerInvocation: config.maxItemsPerInvocation,
    handoffTimeout: config.handoffTimeout,
  },
  async (docs, ctx) => {
    let worker = workers.get(ctx.signal);
    if (worker === undefined) {
      worker = workers.size + 1;
      workers.set(ctx.signal, worker);
    }
    for (const d of docs) {
      const t = process.hrtime.bigint().toString();
      const line: HandledLine = { id: d.id, pk: d.pk, n: d.n, host: name, t, lease: ctx.leaseToken, worker };
      appendFileSync(fd, `${JSON.stringify(line)}\n`);
    }
    if (config.holdBatches) {
      log(`holding ${ctx.leaseToken}`);
      await new Promise<void>((r) => ctx.signal.addEventListener("abort", () => r(), { once: true }));
      log(`signal ${ctx.leaseToken} aborted at ${now()}`);
    }
  },
);
processor.on("acquired", (token) => log(`acquired ${token} at ${now()}`));
processor.on("released", (token) => log(`released ${token}`));
processor.on("lost", (token, reason) => log(`lost ${token} (${reason}) at ${now()}`));
processor.on("split", (parent, children) => log(`split ${parent} -> ${children.join(",")}`));
processor.on("error", (error, token) =>
  log(`error on lease ${token ?? "-"}: ${error instanceof Error ? error.message : String(error)}`),
);

let stopping = false;
process.on("SIGTERM", () => {
  if (stopping) return;
  stopping = true;
  log("SIGTERM: stopping");
  void processor
    .stop()
    .catch((e: unknown) => log(`stop failed: ${String(e)}`))
    .finally(() => {
      closeSync(fd);
      client.dispose();
      process.exit(0);
    });
});
// The parent went away (test crashed or was killed): do not linger.
process.on("disconnect", () => process.exit(1));

// A start can fail transiently (e.g. the SDK gives up on a throttled lease-container request): try again.
for (let attempt = 1; ; attempt++) {
  try {
    await processor.start();
    break;
  } catch (e) {
    if (attempt >= 5) throw e;
    log(`start failed (attempt ${attempt}): ${e instanceof Error ? e.message : String(e)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
log(`started; owns ${processor.ownedLeaseTokens().join(",") || "nothing yet"}`);
process.send?.({ ready: true });
