import type { LogEntry, PartitionKeyRangeInfo } from "./types.js";

/** Physical partition key ranges and the search of their change logs. */

/** One physical partition key range: its EPK bounds and its LSN-ordered change log. */
export class PhysicalRange {
  /** Every change in LSN order; superseded versions and deletes stay until compaction. */
  log: LogEntry[] = [];
  /** Entries of `log` no longer visible to the latest-version feed (superseded or deletes). */
  dead = 0;
  /**
   * This range's LSN: the last one it handed out (the session token's LSN). Each range counts its own, as the
   * service's physical partitions do; children of a split go on from their parent's, a merge from the higher.
   */
  lastLsn = 0;
  /** Whether `log` is also in time order (a merged range's is not: both parents' LSNs interleave). */
  timeOrdered = true;

  constructor(
    readonly id: string,
    readonly minInclusive: string,
    readonly maxExclusive: string,
    readonly parents: string[],
  ) {}

  info(): PartitionKeyRangeInfo {
    return {
      id: this.id,
      minInclusive: this.minInclusive,
      maxExclusive: this.maxExclusive,
      parents: this.parents,
    };
  }

  contains(epk: string): boolean {
    return epk >= this.minInclusive && (this.maxExclusive === "FF" || epk < this.maxExclusive);
  }
}

/** The order of a range's log: by LSN, then (a merged range's equal LSNs) by commit. */
export function byLsnThenSeq(a: LogEntry, b: LogEntry): number {
  return a.lsn - b.lsn || a.seq - b.seq;
}

/** Index of the first entry of an LSN-ordered log after `lsn` (binary search). */
export function firstAfterLsn(log: LogEntry[], lsn: number): number {
  let lo = 0;
  let hi = log.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (log[mid].lsn <= lsn) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the first entry of a time-ordered log at or after `ms` (binary search). */
export function firstAtOrAfterTime(log: LogEntry[], ms: number): number {
  let lo = 0;
  let hi = log.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (log[mid].atMs < ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
