import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { epkLeaseToken, leaseId } from "./ids.js";
import { JAVA_MODE_FULL_FIDELITY, JAVA_MODE_INCREMENTAL, UnsupportedLeaseError } from "./java-state.js";
import { childShape, continuationValue, feedRangeValue, type LeaseShape, readShape } from "./shape.js";

export {
  containerRidOfLeaseId,
  databaseRidOf,
  decodeResourceId,
  encodeResourceId,
  epkLeaseToken,
  infoDocumentId,
  LEASE_ID_SEPARATOR,
  leaseId,
  leasePrefix,
  lockDocumentId,
} from "./ids.js";
export type { LeaseShape } from "./shape.js";

/**
 * Lease documents exactly as the .NET v3 Change Feed Processor (and the Azure Functions Cosmos DB trigger)
 * writes them (azure-cosmos-dotnet-v3, Microsoft.Azure.Cosmos/src/ChangeFeedProcessor/LeaseManagement:
 * DocumentServiceLeaseCore, DocumentServiceLeaseCoreEpk). Leases written by the Java SDK are read
 * too and rewritten in their own shape (`LeaseShape`).
 */

/** Change feed mode names as stored in a lease's `Mode`. */
export const LeaseMode = {
  LatestVersion: "Incremental Feed",
  AllVersionsAndDeletes: "Full-Fidelity Feed",
} as const;
/** The lease's `Mode`, as .NET writes it: the latest-version feed or all versions and deletes. */
export type LeaseMode = (typeof LeaseMode)[keyof typeof LeaseMode];

/** 0 = lease of one partition key range (LeaseToken = range id); 1 = lease of an EPK range (LeaseToken = "min-max"). */
export type LeaseVersion = 0 | 1;

/**
 * A range of effective partition key values: `min` inclusive, `max` exclusive (hex strings; "" and "FF" bound
 * the whole range).
 */
export interface EpkRange {
  /** Inclusive lower bound (hex). */
  min: string;
  /** Exclusive upper bound (hex). */
  max: string;
}

/** The lease document as stored (field names and casing are .NET's). */
export interface LeaseDocument {
  /** `<prefix><host>_<database rid>_<container rid>..<lease token>`. */
  id: string;
  /** The partition key value, when the lease container is partitioned on `/partitionKey` (the id). */
  partitionKey?: string;
  /** 0: the lease of one partition key range; 1: of an EPK range. */
  version: LeaseVersion;
  /** The document's etag (the service's). */
  _etag?: string | null;
  /** The range id (version 0) or "min-max" (version 1). */
  LeaseToken: string;
  /** The range id, on leases migrated from the V2 library. */
  PartitionId?: string;
  /** The EPK range (version 1): `{ Range: { min, max } }` as .NET writes it. */
  FeedRange?: unknown;
  /** Java's spelling of FeedRange (epk-version leases). */
  feedRange?: unknown;
  /** The owning host's instance name; null when unowned. */
  Owner: string | null;
  /**
   * Where processing resumes: the feed's etag (.NET), or Java's whole encoded state; null before the first
   * checkpoint.
   */
  ContinuationToken: string | null;
  /** Free-form string properties (.NET's `Properties`). */
  properties: Record<string, string>;
  /** Last client-side write, ISO 8601 (.NET's `timestamp`). */
  timestamp: string | null;
  /** Last write by the service's clock (seconds since the epoch). */
  _ts?: number;
  /** `LeaseMode`'s value; absent on leases of older SDKs (latest version). */
  Mode?: string;
}

/** A lease as the processor works with it: the parsed document plus its concurrency token. */
export interface Lease {
  /** The lease document's id. */
  id: string;
  /** Partition key value used for every operation on this document (`id`, or the stored `partitionKey`). */
  partitionKeyValue: string;
  /** Whether the document carries `partitionKey` (the `/partitionKey` lease container layout). */
  hasPartitionKeyProperty: boolean;
  /** 0: the lease of one partition key range; 1: of an EPK range. */
  version: LeaseVersion;
  /** The range id (version 0) or "min-max" (version 1). */
  leaseToken: string;
  /** Set for leases migrated from the V2 library (kept on write, as .NET does). */
  legacyPartitionId?: string;
  /** The EPK range, for version-1 leases. */
  feedRange: EpkRange | undefined;
  /** The owning host's instance name; null when unowned. */
  owner: string | null;
  /** The feed's etag processing resumes from; null before the first checkpoint. */
  continuationToken: string | null;
  /** Free-form string properties, kept on every write. */
  properties: Record<string, string>;
  /** Last client-side update (ms since epoch), from `timestamp` or else `_ts`. */
  timestampMs: number;
  /** Which change feed the lease reads. */
  mode: LeaseMode;
  /** The document's etag: every write is conditional on it (If-Match). */
  etag: string;
  /** How the stored document spells what differs between the SDKs; absent for leases this library creates. */
  shape?: LeaseShape;
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

/**
 * `properties` key beside {@link HANDOFF_PROPERTY}: the stopping host that released the lease. While it is fresh,
 * other hosts know that host is stopping: it is nobody's successor (hosts stopping together would otherwise hand
 * each other their leases, a stopping host that has released some of its own looking like the least loaded), and
 * a lease handed to it is an ordinary available one. Acquiring removes it.
 */
export const HANDOFF_FROM_PROPERTY = "handoffFrom";

/** `properties` without the hand-off hints: what an acquire, a new release and a split's children keep. */
export function withoutHandoffHints(properties: Record<string, string>): Record<string, string> {
  const { [HANDOFF_PROPERTY]: _to, [HANDOFF_FROM_PROPERTY]: _from, ...rest } = properties;
  return rest;
}

/**
 * `properties.replaces` on a lease created by a split (or merge) replacement: the token of the lease it replaces.
 * The parent's deletion does not show in the latest-version lease feed, so other hosts' views keep the parent
 * until they try to take it; a parent whose range its children tile is left out of the balancing counts
 * (balancing/superseded.ts). .NET keeps properties it does not know as they are.
 */
export const REPLACES_PROPERTY = "replaces";

/** Parses ISO-8601 timestamps tolerantly: more than 3 fractional digits, a Java `[UTC]` suffix. */
export function parseLeaseTimestamp(value: unknown): number | undefined {
  if (typeof value !== "string" || value.length === 0) return undefined;
  const cleaned = value.replace(/\[[^\]]*\]$/, "");
  const ms = Date.parse(cleaned);
  return Number.isNaN(ms) ? undefined : ms;
}

export class InvalidLeaseError extends CosmosFeedError {
  constructor(
    readonly documentId: string,
    message: string,
  ) {
    super(`Lease document '${documentId}' is invalid: ${message}`);
  }
}

export { UnsupportedLeaseError };

const modeOf = (value: unknown): LeaseMode | undefined =>
  value === LeaseMode.AllVersionsAndDeletes || value === JAVA_MODE_FULL_FIDELITY
    ? LeaseMode.AllVersionsAndDeletes
    : value === LeaseMode.LatestVersion || value === JAVA_MODE_INCREMENTAL
      ? LeaseMode.LatestVersion
      : undefined;

/** Reads a lease document written by this library, .NET (version 0 or 1), the V2 library or Java. */
export function parseLease(doc: Record<string, unknown>): Lease {
  const id = doc.id;
  if (typeof id !== "string") throw new InvalidLeaseError(String(id), "no string id");
  const version: LeaseVersion = doc.version === 1 ? 1 : 0;
  const legacy = typeof doc.PartitionId === "string" ? doc.PartitionId : undefined;
  const token = typeof doc.LeaseToken === "string" ? doc.LeaseToken : legacy;
  if (token === undefined) throw new InvalidLeaseError(id, "neither LeaseToken nor PartitionId is set");
  const { shape, feedRange, continuationToken, javaMode } = readShape(id, doc);
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
    continuationToken,
    properties,
    timestampMs: parseLeaseTimestamp(doc.timestamp) ?? ts,
    // .NET treats a missing Mode as the latest-version feed; a Java lease names its mode in its state.
    mode: modeOf(doc.Mode) ?? modeOf(javaMode) ?? LeaseMode.LatestVersion,
    etag: typeof doc._etag === "string" ? doc._etag : "",
    shape,
    ...(typeof doc._lsn === "number" ? { lsn: doc._lsn } : {}),
  };
}

/**
 * Serializes a lease with exactly the .NET field set and order (nulls written, not omitted), in the shape it
 * was read with: Java's `feedRange` casing and base64 state stay, and `Mode` is written only when the document
 * had one (or is new). `timestamp` is the time of this write.
 */
export function toLeaseDocument(lease: Lease, nowMs: number): LeaseDocument {
  const feedRangeProperty = lease.shape?.feedRangeProperty ?? "FeedRange";
  const doc: LeaseDocument = {
    id: lease.id,
    ...(lease.hasPartitionKeyProperty ? { partitionKey: lease.partitionKeyValue } : {}),
    version: lease.version,
    _etag: lease.etag || null,
    LeaseToken: lease.leaseToken,
    ...(lease.legacyPartitionId !== undefined ? { PartitionId: lease.legacyPartitionId } : {}),
    ...(lease.feedRange ? { [feedRangeProperty]: feedRangeValue(lease.shape, lease.feedRange) } : {}),
    Owner: lease.owner,
    ContinuationToken: continuationValue(
      lease,
      lease.mode === LeaseMode.AllVersionsAndDeletes ? JAVA_MODE_FULL_FIDELITY : JAVA_MODE_INCREMENTAL,
    ),
    properties: { ...lease.properties },
    timestamp: new Date(nowMs).toISOString(),
    ...(lease.shape === undefined || lease.shape.hasMode ? { Mode: lease.mode } : {}),
  };
  return doc;
}

/**
 * A new, unowned lease for a partition key range (version 0) or an EPK range (version 1). `properties` are
 * copied (a split's children inherit the parent's) without a pending hand-off: a new lease is nobody's
 * hand-off. `like`: a split's parent, whose shape the child keeps (a Java parent gets Java children).
 */
export function newLease(
  prefix: string,
  layout: "id" | "partitionKey",
  range: { id?: string; min: string; max: string },
  continuationToken: string | null,
  mode: LeaseMode,
  properties: Record<string, string> = {},
  like?: Lease,
): Lease {
  const version: LeaseVersion = range.id !== undefined ? 0 : 1;
  const token = range.id ?? epkLeaseToken(range);
  const id = leaseId(prefix, token);
  const inherited = withoutHandoffHints(properties);
  const shape = childShape(like?.shape);
  return {
    id,
    partitionKeyValue: id,
    hasPartitionKeyProperty: layout === "partitionKey",
    version,
    leaseToken: token,
    feedRange: { min: range.min, max: range.max },
    owner: null,
    continuationToken,
    properties: inherited,
    timestampMs: 0,
    mode,
    etag: "",
    ...(shape ? { shape } : {}),
  };
}

/** Available for taking: no owner, or its owner has not written it for longer than the expiration interval. */
export function isAvailable(lease: Lease, nowMs: number, expirationMs: number): boolean {
  return lease.owner === null || lease.timestampMs + expirationMs < nowMs;
}
