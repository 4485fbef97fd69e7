import type { EpkRange } from "./lease.js";

/** Lease document ids and the .NET lease prefix (change-feed-leases.md §2). */

export const LEASE_ID_SEPARATOR = "..";

export function leaseId(prefix: string, leaseToken: string): string {
  return `${prefix}${LEASE_ID_SEPARATOR}${leaseToken}`;
}
export const infoDocumentId = (prefix: string): string => `${prefix}.info`;
export const lockDocumentId = (prefix: string): string => `${prefix}.lock`;
/** This processor's fleet signal (balancing/fleet-signal.ts); outside `<prefix>..`, so .NET never lists it. */
export const fleetSignalDocumentId = (prefix: string): string => `${prefix}.fleet`;

/** The EPK-lease token for a range: "min-max" (min may be empty). */
export function epkLeaseToken(range: EpkRange): string {
  return `${range.min}-${range.max}`;
}

/**
 * The lease prefix .NET derives: processorName + account host + "_" + database rid + "_" + container rid.
 * `endpoint` is the endpoint the client was configured with (.NET's `CosmosClient.Endpoint`; only its host
 * name is used, no scheme or port) — not the regional endpoint the client writes to.
 */
export function leasePrefix(
  processorName: string,
  endpoint: string,
  databaseRid: string,
  containerRid: string,
): string {
  return `${processorName}${new URL(endpoint).hostname}_${databaseRid}_${containerRid}`;
}

/**
 * Cosmos resource ids are base64 with `-` standing for `/` (.NET's `ResourceId.FromBase64String`). Node's
 * decoder would read `-` as URL-safe base64 (`+`), so ids are translated to the standard alphabet first.
 */
export function decodeResourceId(rid: string): Buffer {
  return Buffer.from(rid.replace(/-/g, "/"), "base64");
}

export function encodeResourceId(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64").replace(/\//g, "-");
}

/** The database rid inside a container rid (its first 4 bytes), as .NET derives it for the lease prefix. */
export function databaseRidOf(containerRid: string): string {
  const bytes = decodeResourceId(containerRid);
  if (bytes.length < 8) throw new RangeError(`'${containerRid}' is not a container resource id.`);
  return encodeResourceId(bytes.subarray(0, 4));
}

/** The container rid in a lease id (`…_<db rid>_<container rid>..<token>`); rids never contain `_`. */
export function containerRidOfLeaseId(id: string, leaseToken: string): string {
  const prefix = id.slice(0, Math.max(0, id.length - leaseToken.length - LEASE_ID_SEPARATOR.length));
  return prefix.slice(prefix.lastIndexOf("_") + 1);
}
