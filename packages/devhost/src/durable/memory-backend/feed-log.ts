import type { AnyDoc } from "../documents.js";

/**
 * The memory backend's change feed: the latest version of every stored document, in the order of their last
 * writes, as Cosmos DB's latest-version change feed shows a container. A write appends the document under a new
 * sequence number and retires its earlier entry; a deletion retires it without a new one (the feed shows no
 * deletions, and a document deleted before it was read is never delivered — nor kept in memory). Positions are
 * sequence numbers: a reader reads what follows its checkpoint.
 */

interface Entry {
  seq: number;
  key: string;
  doc: AnyDoc;
}

/** Retired entries kept before the log is compacted (and then only when they are half of it). */
const COMPACT_AFTER = 1_000;

const keyOf = (pk: string, id: string): string => `${pk}\u0000${id}`;

export class FeedLog {
  /** Entries in sequence order; some retired (their key has a later entry, or was deleted). */
  private entries: Entry[] = [];
  /** Each live document's latest sequence number. */
  private readonly latest = new Map<string, number>();
  private retired = 0;
  private seq = 0;
  private readonly waiters = new Set<() => void>();

  /** The sequence number of the last write. */
  get position(): number {
    return this.seq;
  }

  /** `doc` (stored, never mutated afterwards) is the latest version of its id. */
  append(doc: AnyDoc): void {
    const key = keyOf(doc.pk, doc.id);
    if (this.latest.has(key)) this.retired++;
    this.seq++;
    this.latest.set(key, this.seq);
    this.entries.push({ seq: this.seq, key, doc });
    this.compact();
    // Resolving wakes a reader in a later microtask: never a handler inside the writer's call stack.
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** The document was deleted. */
  remove(pk: string, id: string): void {
    if (this.latest.delete(keyOf(pk, id))) {
      this.retired++;
      this.compact();
    }
  }

  /**
   * Up to `max` live documents written after position `after`, in write order, and the position a reader that
   * handled them checkpoints: the last one's, or the log's end when nothing live follows.
   */
  page(after: number, max: number): { docs: AnyDoc[]; last: number } {
    const docs: AnyDoc[] = [];
    for (let i = this.firstAfter(after); i < this.entries.length; i++) {
      const e = this.entries[i];
      if (this.latest.get(e.key) !== e.seq) continue;
      docs.push(e.doc);
      if (docs.length === max) return { docs, last: e.seq };
    }
    return { docs, last: this.seq };
  }

  /** Resolves once something was written after `after`, or `signal` fires. */
  written(after: number, signal: AbortSignal): Promise<void> {
    if (this.seq > after || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /** The index of the first entry after position `after` (binary search: entries are in sequence order). */
  private firstAfter(after: number): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.entries[mid].seq <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private compact(): void {
    if (this.retired < COMPACT_AFTER || this.retired * 2 < this.entries.length) return;
    this.entries = this.entries.filter((e) => this.latest.get(e.key) === e.seq);
    this.retired = 0;
  }
}
