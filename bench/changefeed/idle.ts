/** Change feed bench, phase 5: idle lease-container requests per hour vs the .NET algorithm. */

import type { CosmosClient, Database } from "@azure/cosmos";
import { ChangeFeedDefaults } from "@cosmos-feed/changefeed/options";
import { ownedBy, readLeases } from "./handover.js";
import {
  type BenchDoc,
  config,
  createChangeFeedProcessor,
  createContainers,
  DB,
  type EmulatorProcess,
  meterDelta,
  meterRuDelta,
  requestDelta,
  round1,
  round2,
  sleep,
  sum,
  waitFor,
} from "./setup.js";
import { newClient } from "./throughput.js";

export async function idlePhase(emu: EmulatorProcess, db: Database) {
  const cfg = config.idle;
  const { monitored, leases } = await createContainers(db, "idle", cfg.ranges);
  const clients: CosmosClient[] = [];
  const hosts = Array.from({ length: cfg.hosts }, (_, i) => {
    const client = newClient(emu);
    clients.push(client);
    return createChangeFeedProcessor<BenchDoc>(
      {
        monitoredContainer: client.database(DB).container(monitored.id),
        leaseContainer: client.database(DB).container(leases.id),
        instanceName: `idle-${i}`,
        ...cfg.intervals,
        handoffTimeout: 0,
      },
      async () => {},
    );
  });
  const t0 = Date.now();
  await Promise.all(hosts.map((h) => h.start()));
  const target = cfg.ranges / cfg.hosts;
  await waitFor(
    async () => {
      const rows = await readLeases(leases);
      return hosts.every((h) => ownedBy(rows, h.instanceName) === target);
    },
    60 * cfg.intervals.leaseAcquireInterval,
    "4 hosts to balance",
  );
  const balanceMs = Date.now() - t0;
  // Settle for one expiration interval so start-up writes (acquires, steals, first checkpoints) are over.
  await sleep(cfg.intervals.leaseExpirationInterval);
  const s0 = await emu.stats();
  const c0 = hosts.map((h) => ({ ...h.counters.count }));
  const w0 = Date.now();
  await sleep(cfg.windowSeconds * 1000);
  const s1 = await emu.stats();
  const windowSeconds = (Date.now() - w0) / 1000;
  const c1 = hosts.map((h) => ({ ...h.counters.count }));
  const stillBalanced = hosts.every((h) => h.ownedLeaseTokens().length === target);
  // The RU of a lease point read (what .NET's renew reads cost), after the window so it is not counted in it.
  const sampleLease = (await readLeases(leases))[0];
  const { resources: idDocs } = await leases.items
    .query<{ id: string }>({
      query: "SELECT c.id FROM c WHERE c.LeaseToken = @t",
      parameters: [{ name: "@t", value: sampleLease.token }],
    })
    .fetchAll();
  const leaseDocId = idDocs[0].id;
  const readRu = (await leases.item(leaseDocId, leaseDocId).read()).requestCharge;
  // And of .NET's all-leases query (ours no longer runs one after start: the lease view replaces it).
  const allLeasesQuery = await leases.items
    .query("SELECT * FROM c WHERE IS_DEFINED(c.LeaseToken)", { maxItemCount: 1000 })
    .fetchAll();
  const queryRu = allLeasesQuery.requestCharge;
  await Promise.all(hosts.map((h) => h.stop()));
  for (const c of clients) c.dispose();

  const toPerHour = (n: number) => Math.round((n * 3600) / windowSeconds / cfg.scale);
  const meter = meterDelta(s0, s1, leases.id);
  const http = requestDelta(s0, s1, leases.id);
  const counters: Record<string, number> = {};
  for (let i = 0; i < hosts.length; i++) {
    for (const [k, v] of Object.entries(c1[i]))
      counters[k] = (counters[k] ?? 0) + v - c0[i][k as keyof (typeof c0)[0]];
  }
  const d = ChangeFeedDefaults;
  const dotnetQueries = cfg.hosts * (3600_000 / d.leaseAcquireInterval);
  const dotnetRenewOps = cfg.ranges * 2 * (3600_000 / d.leaseRenewInterval);
  const dotnetPerHour = Math.round(dotnetQueries + dotnetRenewOps);
  const oursMeterPerHour = toPerHour(sum(meter));
  const oursHttpPerHour = toPerHour(sum(http));
  const oursCountersPerHour = toPerHour(sum(counters));
  /** What our renew rule predicts: a lease is rewritten when < 2 renew intervals remain before expiry, i.e.
   * every ceil((expiration − 2·renew) / renew) = 2 renew ticks (34 s at the defaults). */
  const renewTicksPerWrite = Math.ceil(
    (d.leaseExpirationInterval - 2 * d.leaseRenewInterval) / d.leaseRenewInterval,
  );
  /** The watch: hosts take turns, one lease-feed read per slot in total (each host every hosts × slot, at most
   * every acquire interval); no listing queries after start (the view replaces them). */
  const watchReadsPerHour =
    cfg.hosts * d.leaseWatchInterval <= d.leaseAcquireInterval
      ? 3600_000 / d.leaseWatchInterval
      : cfg.hosts * (3600_000 / d.leaseAcquireInterval);
  const predictedPerHour = Math.round(
    watchReadsPerHour + (cfg.ranges * 3600_000) / (renewTicksPerWrite * d.leaseRenewInterval),
  );
  const ru = meterRuDelta(s0, s1, leases.id);
  const ruPerOp = (kind: string) => (meter[kind] ? (ru[kind] ?? 0) / meter[kind] : 0);
  const oursRuPerHour = toPerHour(sum(ru));
  const dotnetRuPerHour = Math.round(
    dotnetQueries * queryRu + (dotnetRenewOps / 2) * (readRu + ruPerOp("replace")),
  );
  return {
    balanceMs,
    stillBalanced,
    windowSeconds: round1(windowSeconds),
    scaledWindowSeconds: round1(windowSeconds * cfg.scale),
    leaseContainer: {
      meterCountsInWindow: meter,
      meterRuInWindow: ru,
      httpRequestsInWindow: http,
      processorCountersInWindow: counters,
    },
    perHour: {
      oursMeter: oursMeterPerHour,
      oursHttp: oursHttpPerHour,
      oursProcessorCounters: oursCountersPerHour,
      oursPredicted: predictedPerHour,
      dotnetAnalytic: dotnetPerHour,
      dotnetBreakdown: {
        balancerQueries: Math.round(dotnetQueries),
        renewReadsPlusReplaces: Math.round(dotnetRenewOps),
      },
    },
    /** RU, not requests: the emulator's charges; .NET's estimated with the measured RU of an all-leases query, a
     * lease point read and our replaces. Ours pays for lease-feed reads instead of queries. */
    ruPerHour: {
      ours: oursRuPerHour,
      dotnetEstimate: dotnetRuPerHour,
      ratio: round2(oursRuPerHour / dotnetRuPerHour),
      ruPerAllLeasesQuery: round2(queryRu),
      ruPerLeaseFeedRead: round2(ruPerOp("changeFeed")),
      ruPerReplace: round2(ruPerOp("replace")),
      ruPerRead: round2(readRu),
    },
    /** ours / .NET, in requests. Goal ≤ 0.5. */
    ratio: {
      meter: round2(oursMeterPerHour / dotnetPerHour),
      http: round2(oursHttpPerHour / dotnetPerHour),
      processorCounters: round2(oursCountersPerHour / dotnetPerHour),
      goal: 0.5,
    },
  };
}
