import type { PartitionSnapshot } from "./documents.js";
import { isTerminal } from "./engine.js";

/**
 * The dispatcher's memory of instances (docs/durable-design.md, "Orchestration work items"): each instance's last
 * snapshot, cached by its ETag so that the next step of an orchestration this host advanced reads nothing; the
 * etags of this host's own commits (the feed echoes them back: not a change); and the message ids consumed here
 * lately (a feed page read before their deletion does not bring them back). All bounded.
 */

/** Snapshots kept (LRU); ended instances are dropped at once. */
const CACHED_INSTANCES = 5_000;
/** Message ids consumed here lately. */
const CONSUMED_REMEMBERED = 20_000;
/** Etags of its own commits a host recognises per instance. */
const WRITTEN_REMEMBERED = 8;

export class SnapshotCache {
  private readonly cache = new Map<string, PartitionSnapshot>();
  /** The last etags this host wrote per cached instance. */
  private readonly written = new Map<string, string[]>();
  private readonly consumed = new Set<string>();

  get(instanceId: string): PartitionSnapshot | undefined {
    return this.cache.get(instanceId);
  }

  /** Drops an instance's snapshot (it may be stale: a lost race, a failure, a hand-over). */
  drop(instanceId: string): void {
    this.cache.delete(instanceId);
  }

  /**
   * Keeps the snapshot of an instance as this host just read or wrote it; false when the instance ended with
   * nothing pending (nothing of it is kept: it needs nothing more from this host).
   */
  remember(instanceId: string, snap: PartitionSnapshot): boolean {
    this.cache.delete(instanceId);
    if (snap.instance && isTerminal(snap.instance.status) && snap.messages.length === 0) {
      this.written.delete(instanceId);
      return false;
    }
    const etag = snap.instance?._etag;
    if (etag) {
      const list = this.written.get(instanceId) ?? [];
      list.push(etag);
      if (list.length > WRITTEN_REMEMBERED) list.shift();
      this.written.set(instanceId, list);
    }
    this.cache.set(instanceId, snap);
    if (this.cache.size > CACHED_INSTANCES) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
      this.written.delete(oldest);
    }
    return true;
  }

  /**
   * Another copy of the instance document was seen (the feed; `etag` its etag) or the instance was purged (no
   * etag): the snapshot is dropped unless the copy is one this host wrote — the feed often brings an older one of
   * this host's own commits than the cache holds, which is not a change. True when the snapshot dropped held
   * messages that were waiting (see OrchestrationDispatcher.forget).
   */
  forget(instanceId: string, etag?: string): boolean {
    const cached = this.cache.get(instanceId);
    if (!cached) return false;
    if (
      etag !== undefined &&
      (cached.instance?._etag === etag || this.written.get(instanceId)?.includes(etag))
    )
      return false;
    this.cache.delete(instanceId);
    return cached.messages.length > 0;
  }

  markConsumed(pk: string, ids: string[]): void {
    for (const id of ids) {
      this.consumed.add(`${pk}/${id}`);
      if (this.consumed.size > CONSUMED_REMEMBERED)
        this.consumed.delete(this.consumed.values().next().value as string);
    }
  }

  wasConsumed(pk: string, id: string): boolean {
    return this.consumed.has(`${pk}/${id}`);
  }
}
