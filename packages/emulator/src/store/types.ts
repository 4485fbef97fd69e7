import type { PartitionKeyComponent } from "../partitioning/epk.js";

export type JsonObject = Record<string, unknown>;

/** The partition key definition as the service echoes it (defaults filled in). */
export interface PartitionKeyDefinition {
  paths: string[];
  kind: "Hash" | "MultiHash";
  version: 1 | 2;
  systemKey?: boolean;
}

/** Kinds of change recorded in a range's log (and in the all-versions-and-deletes feed). */
export enum ChangeOp {
  Create = 0,
  Replace = 1,
  Delete = 2,
}

/** One stored version of a document. Immutable once committed. */
export interface StoredDoc {
  /** Identity inside the container: canonical partition key JSON + NUL + id. */
  readonly key: string;
  readonly id: string;
  /** Canonical JSON of the partition key component array, e.g. `["pkA"]`. */
  readonly pkKey: string;
  readonly pkValues: PartitionKeyComponent[];
  /** Effective partition key (uppercase hex). */
  readonly epk: string;
  /** The document with its system properties (_rid, _self, _etag, _attachments, _ts). */
  readonly body: JsonObject;
  /** `body` serialized once; responses reuse it. */
  readonly json: string;
  /** LSN in the physical partition that holds this version (`_lsn`): each range counts its own. */
  readonly lsn: number;
  readonly etag: string;
  /** Write time (ms since epoch). */
  readonly writtenAtMs: number;
  /** When TTL makes it invisible (ms since epoch), or Infinity. */
  readonly expiresAtMs: number;
}

/** A change in a range's LSN-ordered log. */
export interface LogEntry {
  /** Container-wide commit sequence: the order changes were made in (persistence key, cross-range order). */
  readonly seq: number;
  /** The range's own LSN (the `_lsn` and the continuation of a feed read on that range). */
  readonly lsn: number;
  readonly op: ChangeOp;
  /** The version written (create/replace) or the version deleted (delete). */
  readonly doc: StoredDoc;
  /** LSN of the version this change replaced or deleted (0 for a create). */
  readonly previousLsn: number;
  readonly atMs: number;
  readonly ttlExpired: boolean;
  /** A later change of the same document exists (latest-version feed skips it). */
  superseded: boolean;
}

export interface PartitionKeyRangeInfo {
  id: string;
  minInclusive: string;
  maxExclusive: string;
  parents: string[];
  /**
   * The range's LSN when the layout was saved (a floor: later writes are in the change log). Missing in data
   * folders written before ranges counted their own LSNs.
   */
  lastLsn?: number;
}
