import type { LogEntry, PartitionKeyRangeInfo } from "./types.js";

/** Physical partition key ranges and the search of their change logs. */

/** One physical partition key range: its EPK bounds and its LSN-ordered change log. */
export class PhysicalRange {
  /** Every change in LSN order; superseded versions and deletes stay until compaction. */
  log: LogEntry[] = [];
  /** Entries of `log` no longer visible to the latest-version feed (superseded or deletes). */
  dead = 0;
  /** Highest LSN written into this range (the session token's LSN). */
  lastLsn = 0;

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
