import { estimateLag, type LeaseLag, parseLease } from "@cosmos-feed/changefeed";
import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import { QUEUE_ID_PREFIX } from "@cosmos-feed/locks";
import type { ApiResponse } from "./api.js";
import type { AppContext } from "./context.js";
import { RESOURCE_TRIGGERS } from "./reactions.js";

export interface LeaseReport {
  leaseToken: string;
  owner: string | null;
  continuation: string | null;
  /** When the lease was last written (ISO), from its `_ts`. */
  lastWritten: string | null;
  estimatedLag: number | null;
}

export interface PrefixReport {
  function: string;
  leaseContainerPrefix: string;
  leases: LeaseReport[];
  totalLag: number;
  /** Why lag could not be estimated (e.g. no leases yet, an unsupported lease). */
  error?: string;
}

/**
 * Leases of both resource triggers, per prefix: owner, continuation, last write and estimated lag per lease (the
 * library's estimator, which reads but never writes leases).
 */
export async function leaseReport(ctx: AppContext): Promise<PrefixReport[]> {
  return Promise.all(
    Object.values(RESOURCE_TRIGGERS).map(async (t): Promise<PrefixReport> => {
      const { resources: docs } = await ctx.containers.leases.items
        .query<Record<string, unknown>>({
          query: "SELECT * FROM c WHERE STARTSWITH(c.id, @prefix)",
          parameters: [{ name: "@prefix", value: t.leaseContainerPrefix }],
        })
        .fetchAll();
      const leases = new Map<string, LeaseReport>();
      for (const doc of docs) {
        const id = String(doc.id);
        // Leases are `<prefix>..<token>`; `.info`, `.lock` and `.fleet` are the processors' own documents.
        if (!id.includes("..")) continue;
        try {
          const lease = parseLease(doc);
          leases.set(lease.leaseToken, {
            leaseToken: lease.leaseToken,
            owner: lease.owner,
            continuation: lease.continuationToken,
            lastWritten: typeof doc._ts === "number" ? new Date(doc._ts * 1000).toISOString() : null,
            estimatedLag: null,
          });
        } catch {
          // not a lease document (another tool's item under the same prefix)
        }
      }
      let error: string | undefined;
      let lags: LeaseLag[] = [];
      try {
        lags = await estimateLag({
          monitoredContainer: ctx.containers.resources,
          leaseContainer: ctx.containers.leases,
          leaseContainerPrefix: t.leaseContainerPrefix,
        });
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      }
      for (const lag of lags) {
        const r = leases.get(lag.leaseToken);
        if (r) r.estimatedLag = lag.estimatedLag;
      }
      const list = [...leases.values()].sort((a, b) => a.leaseToken.localeCompare(b.leaseToken));
      return {
        function: t.functionName,
        leaseContainerPrefix: t.leaseContainerPrefix,
        leases: list,
        totalLag: list.reduce((a, l) => a + (l.estimatedLag ?? 0), 0),
        ...(error ? { error } : {}),
      };
    }),
  );
}

export interface LockReport {
  name: string;
  owner: string;
  acquiredAt: string;
  /** When the lock lapses unless renewed (ISO), from `_ts` + `ttl`. */
  expiresAt: string;
}

/** Locks currently held (waiter queues left out). */
export async function lockReport(ctx: AppContext): Promise<LockReport[]> {
  const { resources } = await ctx.containers.locks.items
    .query<{ id: string; owner: string; acquiredAt: string; ttl: number; _ts: number }>({
      query: "SELECT c.id, c.owner, c.acquiredAt, c.ttl, c._ts FROM c WHERE NOT STARTSWITH(c.id, @queue)",
      parameters: [{ name: "@queue", value: QUEUE_ID_PREFIX }],
    })
    .fetchAll();
  const now = Date.now();
  return resources
    .filter((l) => (l._ts + l.ttl) * 1000 > now)
    .map((l) => ({
      name: l.id,
      owner: l.owner,
      acquiredAt: l.acquiredAt,
      expiresAt: new Date((l._ts + l.ttl) * 1000).toISOString(),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** 200 when the database and every container answer a read; 503 naming what does not. */
export async function health(ctx: AppContext): Promise<ApiResponse> {
  const checks: Record<string, string> = {};
  await Promise.all(
    Object.entries(ctx.containers).map(async ([role, c]) => {
      try {
        await c.read();
        checks[role] = "ok";
      } catch (e) {
        checks[role] =
          statusOf(e) === 404 ? "missing" : `unreachable: ${e instanceof Error ? e.message : String(e)}`;
      }
    }),
  );
  const ok = Object.values(checks).every((v) => v === "ok");
  return {
    status: ok ? 200 : 503,
    body: { status: ok ? "healthy" : "unhealthy", database: ctx.database.id, containers: checks },
  };
}
