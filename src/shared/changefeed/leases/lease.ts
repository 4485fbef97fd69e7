/**
 * Lease documents exactly as the .NET v3 Change Feed Processor (and the Azure Functions Cosmos DB trigger)
 * writes them: see ../shared/reference/change-feed-leases.md §2–§3.
 */

/** Change feed mode names as stored in a lease's `Mode`. */
export const LeaseMode = {
  LatestVersion: "Incremental Feed",
  AllVersionsAndDeletes: "Full-Fidelity Feed",
} as const;
export type LeaseMode = (typeof LeaseMode)[keyof typeof LeaseMode];

/** 0 = lease of one partition key range (LeaseToken = range id); 1 = lease of an EPK range (LeaseToken = "min-max"). */
export type LeaseVersion = 0 | 1;

export interface EpkRange {
  min: string;
  max: string;
}

/** The lease document as stored (field names and casing are .NET's). */
export interface LeaseDocument {
  id: string;
  partitionKey?: string;
  version: LeaseVersion;
  _etag?: string | null;
  LeaseToken: string;
  PartitionId?: string;
  FeedRange?: { Range: EpkRange };
  Owner: string | null;
  ContinuationToken: string | null;
  properties: Record<string, string>;
  timestamp: string | null;
  _ts?: number;
  Mode?: string;
}

/** A lease as the processor works with it: the parsed document plus its concurrency token. */
export interface Lease {
  id: string;
  /** Partition key value used for every operation on this document (`id`, or the stored `partitionKey`). */
  partitionKeyValue: string;
  /** Whether the document carries `partitionKey` (the `/partitionKey` lease container layout). */
  hasPartitionKeyProperty: boolean;
  version: LeaseVersion;
  leaseToken: string;
  /** Set for leases migrated from the V2 library (kept on write, as .NET does). */
  legacyPartitionId?: string;
  feedRange: EpkRange | undefined;
  owner: string | null;
  continuationToken: string | null;
  properties: Record<string, string>;
  /** Last client-side update (ms since epoch), from `timestamp` or else `_ts`. */
  timestampMs: number;
  mode: LeaseMode;
  etag: string;
  /**
   * The partition LSN of the write that produced this copy (`_lsn` in feed pages, the session token of a write
   * response), when known. Orders copies of one document: not stored.
   */
  lsn?: number;
}

/**
 * `properties` key a stopping host sets on a lease it releases to a chosen successor (value: the successor's
 * instance name). Owner stays null, so .NET hosts see an ordinary released lease; ours leave it to the
 * successor while the hand-off is fresh. Acquiring removes it.
 */
export const HANDOFF_PROPERTY = "handoffTo";

export const LEASE_ID_SEPARATOR = "..";

export function leaseId(prefix: string, leaseToken: string): string {
  return `${prefix}${LEASE_ID_SEPARATOR}${leaseToken}`;
}
export const infoDocumentId = (prefix: string): string => `${prefix}.info`;
export const lockDocumentId = (prefix: string): string => `${prefix}.lock`;

/** The EPK-lease token for a range: "min-max" (min may be empty). */
export function epkLeaseToken(range: EpkRange): string {
  return `${range.min}-${range.max}`;
}

/**
 * The lease prefix .NET derives: processorName + account host + "_" + database rid + "_" + container rid.
 * `endpoint` is the client endpoint (only its host name is used, no scheme or port).
 */
export function leasePrefix(
  processorName: string,
  endpoint: string,
  databaseRid: string,
  containerRid: string,
): string {
  return `${processorName}${new URL(endpoint).hostname}_${databaseRid}_${containerRid}`;
}

/** Parses ISO-8601 timestamps tolerantly: more than 3 fractional digits, a Java `[UTC]` suffix. */
export function parseLeaseTimestamp(value: unknown): number | undefined {
  if (typeof value !== "string" || value.length === 0) return undefined;
  const cleaned = value.replace(/\[[^\]]*\]$/, "");
  const ms = Date.parse(cleaned);
  return Number.isNaN(ms) ? undefined : ms;
}

function parseFeedRange(raw: unknown): EpkRange | undefined {
  if (raw === null || typeof raw !== "object") return undefined;
  const r = (raw as { Range?: unknown }).Range;
  if (r !== null && typeof r === "object") {
    const { min, max } = r as { min?: unknown; max?: unknown };
    if (typeof min === "string" && typeof max === "string") return { min, max };
  }
  return undefined;
}

export class InvalidLeaseError extends Error {
  constructor(
    readonly documentId: string,
    message: string,
  ) {
    super(`Lease document '${documentId}' is invalid: ${message}`);
    this.name = "InvalidLeaseError";
  }
}

/** Reads a lease document written by this library, .NET (version 0 or 1), the V2 library or Java. */
export function parseLease(doc: Record<string, unknown>): Lease {
  const id = doc.id;
  if (typeof id !== "string") throw new InvalidLeaseError(String(id), "no string id");
  const version: LeaseVersion = doc.version === 1 ? 1 : 0;
  const legacy = typeof doc.PartitionId === "string" ? doc.PartitionId : undefined;
  const token = typeof doc.LeaseToken === "string" ? doc.LeaseToken : legacy;
  if (token === undefined) throw new InvalidLeaseError(id, "neither LeaseToken nor PartitionId is set");
  const feedRange = parseFeedRange(doc.FeedRange ?? doc.feedRange);
  if (version === 1 && !feedRange)
    throw new InvalidLeaseError(id, "a version-1 (EPK) lease needs FeedRange.Range");
  const ts = typeof doc._ts === "number" ? doc._ts * 1000 : 0;
  const owner = typeof doc.Owner === "string" && doc.Owner.trim().length > 0 ? doc.Owner : null;
  const props = doc.properties;
  const properties: Record<string, string> = {};
  if (props !== null && typeof props === "object") {
    for (const [k, v] of Object.entries(props)) if (typeof v === "string") properties[k] = v;
  }
  return {
    id,
    partitionKeyValue: typeof doc.partitionKey === "string" ? doc.partitionKey : id,
    hasPartitionKeyProperty: typeof doc.partitionKey === "string",
    version,
    leaseToken: token,
    legacyPartitionId: legacy,
    feedRange,
    owner,
    continuationToken:
      typeof doc.ContinuationToken === "string" && doc.ContinuationToken.length > 0
        ? doc.ContinuationToken
        : null,
    properties,
    timestampMs: parseLeaseTimestamp(doc.timestamp) ?? ts,
    mode:
      doc.Mode === LeaseMode.AllVersionsAndDeletes
        ? LeaseMode.AllVersionsAndDeletes
        : LeaseMode.LatestVersion,
    etag: typeof doc._etag === "string" ? doc._etag : "",
    ...(typeof doc._lsn === "number" ? { lsn: doc._lsn } : {}),
  };
}

/**
 * Serializes a lease with exactly the .NET field set and order (nulls written, not omitted).
 * `timestamp` is the time of this write.
 */
export function toLeaseDocument(lease: Lease, nowMs: number): LeaseDocument {
  const doc: LeaseDocument = {
    id: lease.id,
    ...(lease.hasPartitionKeyProperty ? { partitionKey: lease.partitionKeyValue } : {}),
    version: lease.version,
    _etag: lease.etag || null,
    LeaseToken: lease.leaseToken,
    ...(lease.legacyPartitionId !== undefined ? { PartitionId: lease.legacyPartitionId } : {}),
    ...(lease.feedRange
      ? { FeedRange: { Range: { min: lease.feedRange.min, max: lease.feedRange.max } } }
      : {}),
    Owner: lease.owner,
    ContinuationToken: lease.continuationToken,
    properties: { ...lease.properties },
    timestamp: new Date(nowMs).toISOString(),
    Mode: lease.mode,
  };
  return doc;
}

/** A new, unowned lease for a partition key range (version 0) or an EPK range (version 1). */
export function newLease(
  prefix: string,
  layout: "id" | "partitionKey",
  range: { id?: string; min: string; max: string },
  continuationToken: string | null,
  mode: LeaseMode,
  properties: Record<string, string> = {},
): Lease {
  const version: LeaseVersion = range.id !== undefined ? 0 : 1;
  const token = range.id ?? epkLeaseToken(range);
  const id = leaseId(prefix, token);
  return {
    id,
    partitionKeyValue: id,
    hasPartitionKeyProperty: layout === "partitionKey",
    version,
    leaseToken: token,
    feedRange: { min: range.min, max: range.max },
    owner: null,
    continuationToken,
    properties: { ...properties },
    timestampMs: 0,
    mode,
    etag: "",
  };
}

/** Available for taking: no owner, or its owner has not written it for longer than the expiration interval. */
export function isAvailable(lease: Lease, nowMs: number, expirationMs: number): boolean {
  return lease.owner === null || lease.timestampMs + expirationMs < nowMs;
}
