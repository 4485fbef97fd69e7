import { CosmosFeedError } from "@cosmos-feed/core/errors";

/**
 * The Java SDK's epk-version processor (`handleLatestVersionChanges`, `handleAllVersionsAndDeletesChanges`)
 * stores in `ContinuationToken` not the raw feed etag .NET stores, but its whole `ChangeFeedStateV1`: JSON,
 * base64url-encoded with padding (`ChangeFeedState.toString`), e.g.
 *
 * ```json
 * {"V":1,"Rid":"<container rid>","Mode":"INCREMENTAL","StartFrom":{"Type":"NOW"},
 *  "Continuation":{"V":1,"Rid":"<container rid>",
 *                  "Continuation":[{"token":"\"24\"","range":{"min":"","max":"FF"}}],
 *                  "Range":{"min":"","max":"FF"}}}
 * ```
 *
 * A processor lease holds exactly one continuation (Java's PartitionProcessorImpl checks it); its `token` is the
 * raw etag of the last page, the same value .NET checkpoints. So a Java lease is read by extracting that
 * etag, and written back by putting the new etag into the same state: Java hosts keep reading it.
 */
export type JavaChangeFeedState = Record<string, unknown>;

/** A lease this library can list but must not process (acquiring it throws this). */
export class UnsupportedLeaseError extends CosmosFeedError {
  constructor(
    /** The lease document's id. */
    readonly documentId: string,
    /** Why it cannot be processed. */
    readonly reason: string,
  ) {
    super(`Lease '${documentId}' cannot be processed by this library: ${reason}`, {
      code: "UnsupportedLease",
    });
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** Base64 of `{"`: how every Java state starts. A .NET etag starts with a double quote. */
const JAVA_STATE_START = "eyJ";

/** Whether a stored ContinuationToken is a Java state (rather than a raw etag). */
export function looksLikeJavaState(token: string): boolean {
  return token.startsWith(JAVA_STATE_START) && /^[A-Za-z0-9+/_-]+={0,2}$/.test(token);
}

/** Decodes a Java state (base64url, as Java writes it; standard base64 accepted too). */
export function decodeJavaState(token: string): JavaChangeFeedState | undefined {
  if (!looksLikeJavaState(token)) return undefined;
  try {
    const json = Buffer.from(token.replace(/-/g, "+").replace(/_/g, "/"), "base64").toString("utf8");
    const state: unknown = JSON.parse(json);
    return isObject(state) && typeof state.V === "number" ? state : undefined;
  } catch {
    return undefined;
  }
}

/** Java's `Base64.getUrlEncoder()`: URL alphabet, padding kept (Node's "base64url" drops it). */
export function encodeJavaState(state: JavaChangeFeedState): string {
  return Buffer.from(JSON.stringify(state), "utf8")
    .toString("base64")
    .replace(/\+/g, "-")
    .replace(/\//g, "_");
}

/** Java's change feed mode names (ChangeFeedMode enum) ↔ .NET's lease `Mode`. */
export const JAVA_MODE_INCREMENTAL = "INCREMENTAL";
export const JAVA_MODE_FULL_FIDELITY = "FULL_FIDELITY";

interface Range {
  min: string;
  max: string;
}

function tokensOf(state: JavaChangeFeedState): unknown[] | undefined {
  const continuation = state.Continuation;
  if (continuation === undefined || continuation === null) return undefined;
  const tokens = isObject(continuation) ? continuation.Continuation : undefined;
  return Array.isArray(tokens) ? tokens : [];
}

/**
 * The etag a Java state holds for the lease's range: the token of its single continuation, or null before
 * the first checkpoint (no continuation yet: the lease starts from the processor's start option). Throws
 * UnsupportedLeaseError for a state that does not describe one position of exactly this range.
 */
export function javaStateEtag(
  state: JavaChangeFeedState,
  documentId: string,
  range: Range | undefined,
): string | null {
  if (state.V !== 1)
    throw new UnsupportedLeaseError(documentId, `Java change feed state version ${String(state.V)}.`);
  const tokens = tokensOf(state);
  if (tokens === undefined) return null;
  if (tokens.length !== 1) {
    throw new UnsupportedLeaseError(
      documentId,
      `its Java change feed state holds ${tokens.length} continuations; one lease range needs exactly one.`,
    );
  }
  const entry = tokens[0];
  const entryRange = isObject(entry) && isObject(entry.range) ? entry.range : undefined;
  if (
    !isObject(entry) ||
    !entryRange ||
    (range && (entryRange.min !== range.min || entryRange.max !== range.max))
  ) {
    throw new UnsupportedLeaseError(
      documentId,
      "its Java change feed state's continuation does not cover exactly the lease's feed range.",
    );
  }
  if (entry.token === null || entry.token === undefined) return null;
  if (typeof entry.token !== "string" || entry.token.length === 0) {
    throw new UnsupportedLeaseError(
      documentId,
      "its Java change feed state's continuation token is not a string.",
    );
  }
  return entry.token;
}

/** The range object Java writes (`new Range<>(min, max, true, false)`: isMaxInclusive false is omitted). */
const javaRange = (r: Range) => ({ min: r.min, max: r.max, isMinInclusive: true });

/**
 * The state to store for `etag` at `range`: `previous` with its single continuation's token (and range) replaced,
 * or, for a lease that has none yet, a continuation added as Java's ChangeFeedStateV1 does (the feed range
 * moves from the state's root into the continuation). A lease without any previous state gets a fresh one.
 */
export function javaStateWithEtag(
  previous: JavaChangeFeedState | undefined,
  etag: string,
  range: Range,
  fresh: { containerRid: string; mode: string },
): JavaChangeFeedState {
  const state: JavaChangeFeedState = previous
    ? structuredClone(previous)
    : { V: 1, Rid: fresh.containerRid, Mode: fresh.mode, StartFrom: { Type: "BEGINNING" } };
  const tokens = tokensOf(state);
  if (tokens && tokens.length === 1 && isObject(tokens[0])) {
    const entry = tokens[0];
    entry.token = etag;
    const stored = isObject(entry.range) ? entry.range : {};
    if (stored.min !== range.min || stored.max !== range.max) entry.range = javaRange(range);
    const continuation = state.Continuation as Record<string, unknown>;
    if (isObject(continuation.Range)) {
      const r = continuation.Range;
      if (r.min !== range.min || r.max !== range.max) continuation.Range = javaRange(range);
    }
    return state;
  }
  const rid = typeof state.Rid === "string" ? state.Rid : fresh.containerRid;
  delete state.Range;
  delete state.PKRangeId;
  delete state.PK;
  state.Continuation = {
    V: 1,
    Rid: rid,
    Continuation: [{ token: etag, range: javaRange(range) }],
    Range: javaRange(range),
  };
  return state;
}
