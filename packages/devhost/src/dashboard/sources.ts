import type { CosmosClient } from "@azure/cosmos";
import {
  type LockDocument,
  type LockQueueDocument,
  type LockTicket,
  lockExpiresAtMs,
  QUEUE_ID_PREFIX,
} from "@cosmos-feed/locks";
import type { ResolvedCosmosTriggerOptions } from "../cosmos/trigger.js";
import { readLeases } from "../leaseReport.js";
import type { LeaseView, LockHolder, LocksData, TriggerLeases } from "./types.js";

/**
 * The dashboard's data sources, each read with the dashboard's own (tallied) clients and each failing on its own.
 * Leases go through `cosmos-feed leases`' reader (packages/devhost/src/leaseReport.ts), so every lease shape it reads (ours, the
 * Functions trigger's, .NET's) shows here the same way.
 */

export interface TriggerSource {
  functionName: string;
  resolved: ResolvedCosmosTriggerOptions;
  /** The dashboard's client for the lease connection; undefined with the reason when it does not resolve. */
  leaseClient: CosmosClient | { error: string };
  /**
   * The endpoint whose host the lease ids name: the MONITORED connection's (leasePrefix in
   * packages/changefeed/src/leases/ids.ts), not the lease connection's; the lease connection's only when the monitored
   * one does not resolve.
   */
  endpoint: string;
  /** Lag needs the monitored container through the same client: false when the connections differ. */
  sameAccount: boolean;
  /** This host's processor instance name for the trigger, when its listener runs. */
  thisHostOwner: string | undefined;
  /** Sources with the same key read the lease container once per refresh (leaseReadKey). */
  leaseReadKey: string;
  /** Set for the durable task hub's dispatch leases (hubLeaseSource): the hub's name. */
  taskHub?: string;
}

export interface LagCache {
  /** lease id → lag, and when it was read. */
  values: Map<string, number | null>;
  readAt: number;
  error?: string;
}

/** A trigger's row with what its options say and no leases yet: the start of a read, or all there is when it fails. */
export function triggerLeasesBase(t: TriggerSource): TriggerLeases {
  const r = t.resolved;
  return {
    functionName: t.functionName,
    monitored: `${r.databaseName}/${r.containerName}`,
    leaseContainer: `${r.leaseDatabaseName}/${r.leaseContainerName}`,
    prefix: r.leaseContainerPrefix,
    leaseExpirationIntervalMs: r.leaseExpirationInterval,
    thisHostOwner: t.thisHostOwner ?? null,
    owners: [],
    leases: [],
    ...(t.taskHub ? { taskHub: t.taskHub } : {}),
  };
}

export async function readTriggerLeases(
  t: TriggerSource,
  o: {
    now: number;
    lagDue: boolean;
    lag: LagCache;
    /** The lease container's documents, read once for every trigger sharing it in this refresh. */
    documents: (client: CosmosClient) => Promise<Record<string, unknown>[]>;
  },
): Promise<TriggerLeases> {
  const r = t.resolved;
  const base = triggerLeasesBase(t);
  if ("error" in t.leaseClient) return { ...base, error: t.leaseClient.error };
  const withLag = o.lagDue && t.sameAccount;
  const report = await readLeases(t.leaseClient, {
    connection: t.endpoint,
    database: r.databaseName,
    leaseDatabase: r.leaseDatabaseName,
    leaseContainer: r.leaseContainerName,
    ...(withLag ? { container: r.containerName } : {}),
    prefix: r.leaseContainerPrefix,
    exactPrefix: true,
    expirationMs: r.leaseExpirationInterval,
    now: o.now,
    documents: await o.documents(t.leaseClient),
  });
  if (withLag) {
    o.lag.values = new Map(report.leases.map((l) => [l.id, l.estimatedLag]));
    o.lag.readAt = o.now;
    o.lag.error = report.lagErrors[r.leaseContainerPrefix];
  }
  const leases: LeaseView[] = report.leases.map((l) => ({
    id: l.id,
    leaseToken: l.leaseToken,
    range: l.range,
    owner: l.owner,
    thisHost: l.owner !== null && l.owner === t.thisHostOwner,
    continuation: l.continuation,
    lastWriteAgeMs: l.lastWriteAgeMs,
    // From the lease's own last write, not `now - age`: the age is clamped at 0 for a lease written after `now`
    // was taken (while the listing was read), which would put its expiry that much too early.
    expiresAt: l.owner === null ? null : new Date(l.lastWriteMs + r.leaseExpirationInterval).toISOString(),
    expired: l.expired,
    estimatedLag: o.lag.values.get(l.id) ?? null,
  }));
  const byOwner = new Map<string, number>();
  for (const l of leases) byOwner.set(l.owner ?? "(none)", (byOwner.get(l.owner ?? "(none)") ?? 0) + 1);
  const owners = [...byOwner]
    .map(([owner, n]) => ({ owner, thisHost: owner === t.thisHostOwner, leases: n }))
    .sort((a, b) => Number(b.thisHost) - Number(a.thisHost) || a.owner.localeCompare(b.owner));
  const lagError = !t.sameAccount
    ? "the lease container is on another connection than the monitored container: lag not estimated"
    : o.lag.error;
  return { ...base, owners, leases, ...(lagError ? { lagError } : {}) };
}

/** A document of the lock container: a lock (LockDocument) or a waiter queue (LockQueueDocument), checked as read. */
type LockContainerDoc = { id: string; _ts?: number } & Partial<Omit<LockDocument, "id">> &
  Partial<Omit<LockQueueDocument, "id" | "ttl">>;

/** Lock holders (documents of packages/locks/src) with the time left on their TTL, and their queued waiters. */
export async function readLocks(
  client: CosmosClient,
  where: { databaseName: string; containerName: string },
  nowMs: number,
  abortSignal?: AbortSignal,
): Promise<LocksData> {
  const container = client.database(where.databaseName).container(where.containerName);
  const { resources } = await container.items
    .query<LockContainerDoc>("SELECT * FROM c", { abortSignal })
    .fetchAll();
  const waiters = new Map<string, number>();
  for (const d of resources) {
    if (!d.id.startsWith(QUEUE_ID_PREFIX) || !Array.isArray(d.tickets)) continue;
    const live = (d.tickets as Partial<LockTicket>[]).filter(
      (t) => typeof t?.expiresAt === "number" && t.expiresAt > nowMs,
    );
    waiters.set(typeof d.lock === "string" ? d.lock : d.id.slice(QUEUE_ID_PREFIX.length), live.length);
  }
  const holders: LockHolder[] = [];
  for (const d of resources) {
    if (d.id.startsWith(QUEUE_ID_PREFIX) || typeof d.owner !== "string" || typeof d.ttl !== "number")
      continue;
    const expiresAtMs = lockExpiresAtMs(d._ts ?? 0, d.ttl);
    holders.push({
      name: d.id,
      owner: d.owner,
      acquiredAt: typeof d.acquiredAt === "string" ? d.acquiredAt : null,
      ttlSeconds: d.ttl,
      remainingMs: Math.max(0, expiresAtMs - nowMs),
      expired: expiresAtMs <= nowMs,
      waiters: waiters.get(d.id) ?? 0,
    });
  }
  holders.sort((a, b) => a.name.localeCompare(b.name));
  return { container: `${where.databaseName}/${where.containerName}`, holders };
}

/** Where the durable task hub's dispatch processor keeps its leases (DashboardOptions.durable's `dispatch`). */
export interface DispatchLeases {
  leaseDatabaseName: string;
  leaseContainerName: string;
  prefix: string;
  /** This host's dispatch processor instance name, while its dispatch runs. */
  owner: string | undefined;
  leaseExpirationIntervalMs: number;
}

/**
 * The task hub's dispatch leases as one more row of the leases panel, read like a trigger's: the hub's processor
 * monitors the hub's own container (so its lag is that container's changes not yet dispatched), on the app's
 * account, with leases named by that account's host.
 */
export function hubLeaseSource(
  hub: { hubName: string; databaseName: string; containerName: string; dispatch: DispatchLeases },
  account: { client: CosmosClient; endpoint: string },
): TriggerSource {
  const d = hub.dispatch;
  return {
    functionName: `durable task hub '${hub.hubName}' (dispatch)`,
    taskHub: hub.hubName,
    resolved: {
      connection: "",
      leaseConnection: "",
      databaseName: hub.databaseName,
      containerName: hub.containerName,
      leaseDatabaseName: d.leaseDatabaseName,
      leaseContainerName: d.leaseContainerName,
      leaseContainerPrefix: d.prefix,
      leaseExpirationInterval: d.leaseExpirationIntervalMs,
    } as ResolvedCosmosTriggerOptions,
    leaseClient: account.client,
    leaseReadKey: leaseReadKey(account.endpoint, d.leaseDatabaseName, d.leaseContainerName),
    endpoint: account.endpoint,
    sameAccount: true,
    thisHostOwner: d.owner,
  };
}

/** Rows reading one lease container (on one account) share one read of it per refresh. */
export function leaseReadKey(endpoint: string, database: string, container: string): string {
  return `${endpoint}\u0000${database}\u0000${container}`;
}
