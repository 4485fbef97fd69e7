import { containerRidOfLeaseId } from "./ids.js";
import {
  decodeJavaState,
  encodeJavaState,
  type JavaChangeFeedState,
  javaStateEtag,
  javaStateWithEtag,
  looksLikeJavaState,
  UnsupportedLeaseError,
} from "./java-state.js";
import type { EpkRange } from "./lease.js";

/**
 * What a rewrite keeps from the stored document, so hosts of the SDK that wrote it go on reading it: .NET
 * reads property names case-insensitively, but Java reads `feedRange` and its base64 state only, and a `Mode`
 * added to a lease that had none would be a value its owner never wrote.
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

/** `{Range: {min, max}}` (flags ignored: leases are always [min, max)). */
export function parseFeedRange(raw: unknown): EpkRange | undefined {
  if (raw === null || typeof raw !== "object") return undefined;
  const r = (raw as { Range?: unknown }).Range;
  if (r !== null && typeof r === "object") {
    const { min, max } = r as { min?: unknown; max?: unknown };
    if (typeof min === "string" && typeof max === "string") return { min, max };
  }
  return undefined;
}

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

/** What parseLease takes from the shape of a stored document. */
export interface ShapedFields {
  shape: LeaseShape;
  feedRange: EpkRange | undefined;
  /** The position to read from: the raw etag, or the one inside a Java state (null: none yet). */
  continuationToken: string | null;
  /** A Java state's `Mode` (INCREMENTAL / FULL_FIDELITY), for leases without .NET's `Mode`. */
  javaMode?: unknown;
}

export function readShape(id: string, doc: Record<string, unknown>): ShapedFields {
  const feedRangeProperty =
    doc.FeedRange === undefined && doc.feedRange !== undefined ? "feedRange" : "FeedRange";
  const storedFeedRange = doc[feedRangeProperty];
  const feedRange = parseFeedRange(storedFeedRange);
  const continuation = readContinuation(
    id,
    doc.ContinuationToken,
    feedRange,
    feedRangeProperty === "feedRange",
  );
  return {
    shape: {
      feedRangeProperty,
      ...(storedFeedRange !== undefined ? { storedFeedRange } : {}),
      hasMode: doc.Mode !== undefined,
      ...(continuation.java ? { java: continuation.java } : {}),
      ...(continuation.unsupported ? { unsupported: continuation.unsupported } : {}),
    },
    feedRange,
    continuationToken: continuation.etag,
    ...(continuation.java?.state ? { javaMode: continuation.java.state.Mode } : {}),
  };
}

/** The stored feed range when it still describes the lease's range, else .NET's `{Range: {min, max}}`. */
export function feedRangeValue(shape: LeaseShape | undefined, range: EpkRange): unknown {
  const stored = parseFeedRange(shape?.storedFeedRange);
  if (stored && stored.min === range.min && stored.max === range.max) return shape?.storedFeedRange;
  return { Range: { min: range.min, max: range.max } };
}

/**
 * ContinuationToken as stored: the raw etag, or (Java leases) the etag inside Java's state — the stored string
 * itself while position and range are unchanged. `javaMode` names the mode of a state written from scratch.
 */
export function continuationValue(
  lease: {
    id: string;
    leaseToken: string;
    feedRange: EpkRange | undefined;
    continuationToken: string | null;
    shape?: LeaseShape;
  },
  javaMode: string,
): string | null {
  const java = lease.shape?.java;
  if (!java) return lease.continuationToken;
  // Never rewrite a state this library cannot read (it belongs to the Java hosts), nor one without a position.
  if (lease.continuationToken === null || lease.shape?.unsupported) return java.stored;
  const range = lease.feedRange ?? { min: "", max: "FF" };
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
      mode: javaMode,
    }),
  );
}

/**
 * The shape of a lease replacing `parent` (split or merge): a Java parent's, so Java hosts can read the
 * child; otherwise none — the child is a new lease as .NET writes it (with Mode).
 */
export function childShape(parent: LeaseShape | undefined): LeaseShape | undefined {
  if (!parent || !(parent.java || parent.feedRangeProperty === "feedRange")) return undefined;
  return {
    feedRangeProperty: parent.feedRangeProperty,
    hasMode: parent.hasMode,
    ...(parent.java ? { java: { state: parent.java.state, stored: null } } : {}),
  };
}
