import { CosmosFeedError } from "../../errors.js";
import {
  decodeJavaState,
  encodeJavaState,
  JAVA_MODE_FULL_FIDELITY,
  JAVA_MODE_INCREMENTAL,
  type JavaChangeFeedState,
  javaStateEtag,
  javaStateWithEtag,
  looksLikeJavaState,
  UnsupportedLeaseError,
} from "./java-state.js";

/**
 * Lease documents exactly as the .NET v3 Change Feed Processor (and the Azure Functions Cosmos DB trigger)
 * writes them: see ../shared/reference/change-feed-leases.md §2–§3. Leases written by the Java SDK are read
 * too and rewritten in their own shape (`LeaseShape`).
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
  FeedRange?: unknown;
  /** Java's spelling of FeedRange (epk-version leases). */
  feedRange?: unknown;
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
  /** How the stored document spells what differs between the SDKs; absent for leases this library creates. */
  shape?: LeaseShape;
  /**
   * The partition LSN of the write that produced this copy (`_lsn` in feed pages, the session token of a write
   * response), when known. Orders copies of one document: not stored.
   */
  lsn?: number;
}

/**
 * What a rewrite keeps from the stored document, so hosts of the SDK that wrote it go on reading it: .NET
 * ignores unknown casing differences on read, but Java reads `feedRange` and its base64 state only, and a
 * `Mode` added to a lease that had none would make .NET's mode check compare a value the owner never wrote.
 */
export interface LeaseShape {
  /** `FeedRange` (.NET, Functions, this library) or `feedRange` (Java epk-version). */
  feedRangeProperty: "FeedRange" | "feedRange";
  /** The stored feed range object, written back as it was while the range is unchanged (keeps `isMaxInclusive` etc.). */
  storedFeedRange?: unknown;
  /** Whether the document had `Mode` (Java and V2-library leases do not). */
  hasMode: boolean;
  /**
   * The continuation as Java stores it (base64 ChangeFeedState): the lease's `continuationToken` is the etag
   * inside it, and checkpoints are written back into it. Absent: the raw etag, as .NET stores it.
   */
  java?: { state: JavaChangeFeedState | undefined; stored: string | null };
  /** Why this library cannot process the lease: acquiring it throws UnsupportedLeaseError with this reason. */
  unsupported?: string;
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

/** The etag to read from, and how the continuation is stored (raw etag, or Java's state). */
function readContinuation(
  id: string,
  raw: unknown,
  feedRange: EpkRange | undefined,
  javaShaped: boolean,
): { etag: string | null; java?: LeaseShape["java"]; unsupported?: string } {
  const stored = typeof raw === "string" && raw.length > 0 ? raw : null;
  if (stored === null || !looksLikeJavaState(stored)) {
    // A Java lease that has no checkpoint yet: its first checkpoint is written as a Java state.
    return { etag: stored, ...(javaShaped && stored === null ? { java: { state: undefined, stored } } : {}) };
  }
  const state = decodeJavaState(stored);
  if (!state) {
    return {
      etag: null,
      java: { state: undefined, stored },
      unsupported: "its ContinuationToken looks like a Java change feed state but cannot be decoded.",
    };
  }
  try {
    return { etag: javaStateEtag(state, id, feedRange), java: { state, stored } };
  } catch (e) {
    if (!(e instanceof UnsupportedLeaseError)) throw e;
    return { etag: null, java: { state, stored }, unsupported: e.reason };
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
  const feedRangeProperty =
    doc.FeedRange === undefined && doc.feedRange !== undefined ? "feedRange" : "FeedRange";
  const storedFeedRange = doc[feedRangeProperty];
  const feedRange = parseFeedRange(storedFeedRange);
  if (version === 1 && !feedRange)
    throw new InvalidLeaseError(id, "a version-1 (EPK) lease needs FeedRange.Range");
  const continuation = readContinuation(
    id,
    doc.ContinuationToken,
    feedRange,
    feedRangeProperty === "feedRange",
  );
  const javaMode = continuation.java?.state ? modeOf(continuation.java.state.Mode) : undefined;
  const shape: LeaseShape = {
    feedRangeProperty,
    ...(storedFeedRange !== undefined ? { storedFeedRange } : {}),
    hasMode: doc.Mode !== undefined,
    ...(continuation.java ? { java: continuation.java } : {}),
    ...(continuation.unsupported ? { unsupported: continuation.unsupported } : {}),
  };
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
    continuationToken: continuation.etag,
    properties,
    timestampMs: parseLeaseTimestamp(doc.timestamp) ?? ts,
    // .NET treats a missing Mode as the latest-version feed; a Java lease names its mode in its state.
    mode: modeOf(doc.Mode) ?? javaMode ?? LeaseMode.LatestVersion,
    etag: typeof doc._etag === "string" ? doc._etag : "",
    shape,
    ...(typeof doc._lsn === "number" ? { lsn: doc._lsn } : {}),
  };
}

/** The stored feed range when it still describes the lease's range, else .NET's `{Range: {min, max}}`. */
function feedRangeValue(lease: Lease, range: EpkRange): unknown {
  const stored = parseFeedRange(lease.shape?.storedFeedRange);
  if (stored && stored.min === range.min && stored.max === range.max) return lease.shape?.storedFeedRange;
  return { Range: { min: range.min, max: range.max } };
}

/** ContinuationToken as stored: the raw etag, or (Java leases) the etag inside Java's state. */
function continuationValue(lease: Lease): string | null {
  const java = lease.shape?.java;
  if (!java) return lease.continuationToken;
  if (lease.continuationToken === null) return java.stored;
  const range = lease.feedRange ?? { min: "", max: "FF" };
  // Unchanged position and range: the stored string as Java wrote it.
  if (java.state && java.stored !== null) {
    try {
      if (javaStateEtag(java.state, lease.id, range) === lease.continuationToken) return java.stored;
    } catch {
      // the range changed (a split child): re-encoded below
    }
  }
  return encodeJavaState(
    javaStateWithEtag(java.state, lease.continuationToken, range, {
      containerRid: containerRidOfLeaseId(lease.id, lease.leaseToken),
      mode: lease.mode === LeaseMode.AllVersionsAndDeletes ? JAVA_MODE_FULL_FIDELITY : JAVA_MODE_INCREMENTAL,
    }),
  );
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
    ...(lease.feedRange ? { [feedRangeProperty]: feedRangeValue(lease, lease.feedRange) } : {}),
    Owner: lease.owner,
    ContinuationToken: continuationValue(lease),
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
  const { [HANDOFF_PROPERTY]: _handedTo, ...inherited } = properties;
  // Only a Java parent passes its shape on; other children are new leases as .NET writes them (with Mode).
  const parentShape = like?.shape;
  const shape: LeaseShape | undefined =
    parentShape && (parentShape.java || parentShape.feedRangeProperty === "feedRange")
      ? {
          feedRangeProperty: parentShape.feedRangeProperty,
          hasMode: parentShape.hasMode,
          ...(parentShape.java ? { java: { state: parentShape.java.state, stored: null } } : {}),
        }
      : undefined;
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
