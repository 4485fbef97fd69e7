import type { Container, CosmosClient } from "@azure/cosmos";
import {
  databaseRidOf,
  estimateLeaseLag,
  leasePrefix,
  parseLease,
  prefixEndpoint,
} from "@cosmos-feed/changefeed";
import { readConnectionString } from "@cosmos-feed/core/cosmos/client";
import { errorMessage } from "./errorMessage.js";

/**
 * The lease report of `cosmos-feed leases` and of the dashboard's Leases table: every lease of a lease container, grouped by prefix — token or EPK range, owner,
 * continuation, age of the last write, estimated lag (when the monitored container is named), expired or not.
 * Reads leases written by this library, the Azure Functions trigger and .NET (and Java); never writes.
 */

export interface LeasesOptions {
  /** A connection string (`AccountEndpoint=…;AccountKey=…;`) or an account endpoint (DefaultAzureCredential). */
  connection: string;
  database: string;
  leaseContainer: string;
  leaseDatabase?: string;
  /** The monitored container: lag is estimated only with it. */
  container?: string;
  /** Only leases whose prefix starts with this. */
  prefix?: string;
  /** With `prefix`: only leases whose prefix is exactly it (one trigger's leases, e.g. for the dev host dashboard). */
  exactPrefix?: boolean;
  /** A lease not written for this long counts as expired (the hosts' leaseExpirationInterval), ms. */
  expirationMs: number;
  now?: number;
  /** The lease container's documents when the caller has already read them (one read shared by several prefixes). */
  documents?: Record<string, unknown>[];
}

export interface LeaseRow {
  prefix: string;
  id: string;
  leaseToken: string;
  /** The EPK range of a version-1 lease, "min–max". */
  range: string | null;
  owner: string | null;
  continuation: string | null;
  /** The lease's last write (its `timestamp`, else `_ts`), ms since the epoch: what expiry is counted from. */
  lastWriteMs: number;
  lastWriteAgeMs: number;
  expired: boolean;
  estimatedLag: number | null;
}

export interface LeasesReport {
  leases: LeaseRow[];
  /** Per prefix: why lag could not be estimated, if it could not. */
  lagErrors: Record<string, string>;
  /**
   * Per prefix whose leases show no lag (`?`) without an error: why — no `--container` given, or leases of another
   * monitored container than the one named (its name, when the database has it, to run again with).
   */
  lagNotes: Record<string, string>;
}

/**
 * Splits a lease id `<prefix><host>_<db rid>_<container rid>..<token>` into its processor prefix and host. The host
 * is the account's as the writer named it (this client's, normally: .NET and the Functions trigger take it from
 * their configured endpoint); a lease written under another host name keeps `<prefix><host>` as its prefix label.
 */
export function splitLeaseId(id: string, accountHost: string): { prefix: string; host?: string } | undefined {
  const at = id.lastIndexOf("..");
  if (at < 0) return undefined;
  const store = id.slice(0, at);
  const marker = `${accountHost}_`;
  const i = store.lastIndexOf(marker);
  if (i >= 0 && /^[^_]+_[^_]+$/.test(store.slice(i + marker.length))) {
    return { prefix: store.slice(0, i), host: accountHost };
  }
  const m = /^(.*)_[^_]+_[^_]+$/.exec(store);
  return m ? { prefix: m[1] } : undefined;
}

function endpointHost(connection: string): string {
  const endpoint = readConnectionString(connection)?.endpoint ?? connection;
  try {
    return new URL(endpoint).hostname;
  } catch {
    return "";
  }
}

/**
 * Why `n` leases show no lag though --container was given: they are of another monitored container, which their
 * ids name by rid (`…_<db rid>_<container rid>..<token>`); named here when the database has it (a metadata read).
 */
async function otherContainerNote(
  client: CosmosClient,
  o: LeasesOptions,
  leaseId: string,
  n: number,
): Promise<string> {
  const store = leaseId.slice(0, leaseId.lastIndexOf(".."));
  const rid = store.slice(store.lastIndexOf("_") + 1);
  let name: string | undefined;
  try {
    const { resources } = await client.database(o.database).containers.readAll().fetchAll();
    name = resources.find((c) => c._rid === rid)?.id;
  } catch {
    name = undefined;
  }
  const what = `${n} lease(s) of another monitored container than '${o.container}'`;
  return name
    ? `${what}: '${name}' (--container ${name} estimates their lag)`
    : `${what} (rid ${rid}, not in database '${o.database}')`;
}

export async function readLeases(client: CosmosClient, o: LeasesOptions): Promise<LeasesReport> {
  const now = o.now ?? Date.now();
  const leaseContainer = client.database(o.leaseDatabase ?? o.database).container(o.leaseContainer);
  const resources =
    o.documents ??
    (await leaseContainer.items.query<Record<string, unknown>>("SELECT * FROM c").fetchAll()).resources;
  const rows: LeaseRow[] = [];
  // The parsed lease of each row, so lag is estimated from what was just read, not from a second listing.
  const parsed: { row: LeaseRow; lease: ReturnType<typeof parseLease> }[] = [];
  const accountHost = endpointHost(o.connection);
  for (const doc of resources) {
    let lease: ReturnType<typeof parseLease>;
    try {
      lease = parseLease(doc);
    } catch {
      continue; // .info / .lock documents and anything that is not a lease
    }
    const split = splitLeaseId(lease.id, accountHost);
    const prefix = split?.prefix ?? "";
    if (o.prefix !== undefined && !(o.exactPrefix ? prefix === o.prefix : prefix.startsWith(o.prefix)))
      continue;
    const age = Math.max(0, now - lease.timestampMs);
    const row: LeaseRow = {
      prefix,
      id: lease.id,
      leaseToken: lease.leaseToken,
      range: lease.version === 1 && lease.feedRange ? `${lease.feedRange.min}–${lease.feedRange.max}` : null,
      owner: lease.owner,
      continuation: lease.continuationToken,
      lastWriteMs: lease.timestampMs,
      lastWriteAgeMs: age,
      expired: lease.owner !== null && age > o.expirationMs,
      estimatedLag: null,
    };
    rows.push(row);
    parsed.push({ row, lease });
  }
  const lagErrors: Record<string, string> = {};
  const lagNotes: Record<string, string> = {};
  if (!o.container) {
    for (const prefix of new Set(rows.map((r) => r.prefix))) {
      lagNotes[prefix] = "not estimated: name the monitored container (--container) to estimate lag";
    }
  } else {
    const monitored: Container = client.database(o.database).container(o.container);
    // Only leases of this monitored container have a lag here: their ids carry its rids (and the account host),
    // exactly the leases estimateLag would list for the prefix.
    let storePrefix: ((prefix: string) => string) | Error;
    try {
      const collRid = (await monitored.read()).resource?._rid as string;
      const endpoint = prefixEndpoint(monitored, undefined);
      storePrefix = (prefix) => `${leasePrefix(prefix, endpoint, databaseRidOf(collRid), collRid)}..`;
    } catch (e) {
      storePrefix = e instanceof Error ? e : new Error(String(e));
    }
    for (const prefix of new Set(rows.map((r) => r.prefix))) {
      if (storePrefix instanceof Error) {
        lagErrors[prefix] = storePrefix.message;
        continue;
      }
      const idPrefix = storePrefix(prefix);
      const ofPrefix = parsed.filter((p) => p.row.prefix === prefix && p.lease.id.startsWith(idPrefix));
      const others = parsed.filter((p) => p.row.prefix === prefix && !p.lease.id.startsWith(idPrefix));
      if (others.length > 0) {
        lagNotes[prefix] = await otherContainerNote(client, o, others[0].lease.id, others.length);
      }
      try {
        // All or nothing per prefix, as the estimator answers for a processor's leases.
        const lags = await Promise.all(ofPrefix.map((p) => estimateLeaseLag(monitored, p.lease)));
        ofPrefix.forEach((p, k) => {
          p.row.estimatedLag = lags[k].estimatedLag;
        });
      } catch (e) {
        lagErrors[prefix] = errorMessage(e);
      }
    }
  }
  rows.sort(
    (a, b) =>
      a.prefix.localeCompare(b.prefix) || a.leaseToken.localeCompare(b.leaseToken, "en", { numeric: true }),
  );
  return { leases: rows, lagErrors, lagNotes };
}
