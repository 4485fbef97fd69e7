import type { Clock } from "@cosmos-feed/core/clock";
import type { AnyDoc } from "../documents.js";
import type { FeedLog } from "./feed-log.js";

/**
 * The memory backend's container: partitions (`pk`) of documents (`id`), each stored document stamped as Cosmos DB
 * stamps it — a fresh `_etag` per write, `_ts` the write's time in seconds (the backend's clock) — and fed to the
 * feed log. A stored document is never mutated (a write stores a new object), so the feed log may hold it; what
 * leaves this module is copied by the caller. What comes in is copied as JSON, as Cosmos DB stores it: a property
 * set to undefined is absent when read back, and no caller's object is shared.
 */

export type Stored<T extends AnyDoc> = T & { _etag: string; _ts: number };

export class MemoryPartitions {
  private readonly partitions = new Map<string, Map<string, Stored<AnyDoc>>>();
  private writes = 0;

  constructor(
    private readonly clock: Clock,
    private readonly feed: FeedLog,
  ) {}

  get(pk: string, id: string): Stored<AnyDoc> | undefined {
    return this.partitions.get(pk)?.get(id);
  }

  /** Every document of a partition (stored objects: copy what leaves). */
  docs(pk: string): Stored<AnyDoc>[] {
    return [...(this.partitions.get(pk)?.values() ?? [])];
  }

  /** Every stored document (stored objects: copy what leaves). */
  *all(): Iterable<Stored<AnyDoc>> {
    for (const partition of this.partitions.values()) yield* partition.values();
  }

  /** Creates or replaces `doc` at its pk and id (the caller checked any condition): the stored document. */
  put<T extends AnyDoc>(doc: T): Stored<T> {
    const stored = {
      ...(JSON.parse(JSON.stringify(doc)) as T),
      _etag: `"mem-${++this.writes}"`,
      _ts: Math.floor(this.clock.now() / 1000),
    };
    let partition = this.partitions.get(doc.pk);
    if (!partition) {
      partition = new Map();
      this.partitions.set(doc.pk, partition);
    }
    partition.set(doc.id, stored);
    this.feed.append(stored);
    return stored;
  }

  /** Deletes a document; false when it was not there. */
  remove(pk: string, id: string): boolean {
    const partition = this.partitions.get(pk);
    if (!partition?.delete(id)) return false;
    if (partition.size === 0) this.partitions.delete(pk);
    this.feed.remove(pk, id);
    return true;
  }

  /** Deletes every document of a partition. */
  removePartition(pk: string): void {
    for (const d of this.docs(pk)) this.remove(pk, d.id);
  }
}
