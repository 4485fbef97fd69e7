import type { PhysicalRange } from "./ranges.js";
import type { LogEntry } from "./types.js";

/** One page of a change feed read, put together from what each range of the scope offered. */

/** What one range of the scope offered a feed read: its next changes in LSN order. */
export interface RangePick {
  range: PhysicalRange;
  /** Up to a page of the range's next changes (more when the last ones share an LSN). */
  picked: LogEntry[];
  /** Whether the read reached the end of the range's log. */
  exhausted: boolean;
  /** The continuation the read started after, if any. */
  after: number | undefined;
}

export interface FeedPage {
  entries: LogEntry[];
  /** The continuation of each range of the scope (an LSN of that range) to send back as If-None-Match. */
  continuation: Map<PhysicalRange, number>;
}

/**
 * The page: the ranges' changes in commit order (several ranges: each counts its own LSNs, so only the commit
 * sequence orders them across ranges), cut at `maxItems` but never between two changes of a range that share an LSN
 * (one transaction's, or a merged range's parents'; the page then holds more than `maxItems`), and where
 * each range goes on from: past its last change on the page, or its current LSN when the page took all it had.
 */
export function pageOf(perRange: readonly RangePick[], maxItems: number): FeedPage {
  const continuation = new Map<PhysicalRange, number>();
  if (perRange.length === 1) {
    const { range, picked, exhausted } = perRange[0];
    continuation.set(range, exhausted ? range.lastLsn : picked[picked.length - 1].lsn);
    return { entries: picked, continuation };
  }
  // Merged by the commit sequence of each range's next change: every range gives a prefix of its own (LSN) order.
  const counts = perRange.map(() => 0);
  for (let n = 0; n < maxItems; n++) {
    let best = -1;
    perRange.forEach((p, i) => {
      const next = p.picked[counts[i]];
      if (next && (best < 0 || next.seq < perRange[best].picked[counts[best]].seq)) best = i;
    });
    if (best < 0) break;
    counts[best]++;
  }
  const entries: LogEntry[] = [];
  for (const [i, p] of perRange.entries()) {
    let taken = counts[i];
    // The cut fell between changes sharing an LSN: the rest of them come too.
    while (taken > 0 && taken < p.picked.length && p.picked[taken].lsn === p.picked[taken - 1].lsn) taken++;
    entries.push(...p.picked.slice(0, taken));
    const last = taken > 0 ? p.picked[taken - 1].lsn : undefined;
    if (taken === p.picked.length && p.exhausted) continuation.set(p.range, p.range.lastLsn);
    else if (last !== undefined) continuation.set(p.range, last);
    // Nothing of this range made the page: it starts again just before its first change.
    else continuation.set(p.range, p.after ?? p.picked[0].lsn - 1);
  }
  if (entries.length > 1) entries.sort((a, b) => a.seq - b.seq);
  return { entries, continuation };
}
