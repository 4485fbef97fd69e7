import { badRequest, conflict, notFound, preconditionFailed } from "../errors.js";
import type { Container, Mutation } from "./container.js";
import { validateId } from "./ids.js";
import { canonicalPartitionKey, documentKey } from "./partition-keys.js";
import type { PhysicalRange } from "./ranges.js";
import { ChangeOp, type JsonObject, type StoredDoc } from "./types.js";

/** Staged writes of one request (a single write, a batch, a bulk operation) before the container commits them. */

/** Options a single write can carry (If-Match). */
export interface WriteConditions {
  ifMatch?: string;
}

/**
 * A staged set of writes against one container. Reads see earlier staged writes; nothing is visible to
 * others until {@link Container.commit} applies `mutations`. A transactional one (a transactional batch) gives
 * every change it makes in a range that range's one next LSN: the service commits a transaction with one LSN
 * ("if you create 10 item in a Sproc execution or using Transactional Batch, they all have the same LSN",
 * github.com/Azure/azure-cosmos-dotnet-v3/issues/2644); any other gives each change its own.
 */
export class WriteSet {
  readonly mutations: Mutation[] = [];
  private readonly overlay = new Map<string, StoredDoc | null>();
  /** The last commit sequence number this write set allocated; the container's own moves only on commit. */
  private seq: number;
  /** The last LSN this write set allocated in each range it writes to (each range counts its own). */
  private readonly rangeLsn = new Map<PhysicalRange, number>();

  constructor(
    readonly container: Container,
    readonly nowMs: number,
    /** One LSN per range for everything this write set commits (see the class comment). */
    readonly transactional = false,
  ) {
    this.seq = container.seq;
  }

  /**
   * The LSN the next change to a document with this EPK takes: one past the last of its range, or in a
   * transactional write set the one it already took there.
   */
  private nextLsn(epk: string): { range: PhysicalRange; lsn: number } {
    const range = this.container.rangeFor(epk);
    const taken = this.rangeLsn.get(range);
    if (taken === undefined) return { range, lsn: range.lastLsn + 1 };
    return { range, lsn: this.transactional ? taken : taken + 1 };
  }

  private take(next: { range: PhysicalRange; lsn: number }): number {
    this.rangeLsn.set(next.range, next.lsn);
    this.seq++;
    return next.lsn;
  }

  /** Current version as this write set sees it; expired documents are purged first (a TTL delete). */
  get(key: string): StoredDoc | undefined {
    if (this.overlay.has(key)) return this.overlay.get(key) ?? undefined;
    const d = this.container.docs.get(key);
    if (!d) return undefined;
    if (d.expiresAtMs <= this.nowMs) {
      this.expire(d);
      return undefined;
    }
    return d;
  }

  expire(d: StoredDoc): void {
    const seq = this.seq + 1;
    this.mutations.push({
      op: ChangeOp.Delete,
      seq,
      doc: this.tombstone(d),
      previousLsn: d.lsn,
      ttlExpired: true,
    });
    this.overlay.set(d.key, null);
  }

  /** A delete record: the deleted version's content under a new LSN of its range. */
  private tombstone(d: StoredDoc): StoredDoc {
    return { ...d, lsn: this.take(this.nextLsn(d.epk)) };
  }

  private put(op: ChangeOp, body: JsonObject, previous: StoredDoc | undefined): StoredDoc {
    const seq = this.seq + 1;
    const made = this.container.materialize(body, this.nowMs, previous, seq);
    // Allocated only once materialize succeeded: a refused write (413, bad ttl …) takes no LSN.
    const doc: StoredDoc = { ...made, lsn: this.take(this.nextLsn(made.epk)) };
    this.mutations.push({ op, seq, doc, previousLsn: previous?.lsn ?? 0, ttlExpired: false });
    this.overlay.set(doc.key, doc);
    return doc;
  }

  keyOf(body: JsonObject): string {
    validateId(body.id);
    return documentKey(canonicalPartitionKey(this.container.partitionKeyOf(body)), body.id);
  }

  create(body: JsonObject): StoredDoc {
    if (this.get(this.keyOf(body))) throw conflict();
    return this.put(ChangeOp.Create, body, undefined);
  }

  upsert(body: JsonObject, cond: WriteConditions = {}): { doc: StoredDoc; created: boolean } {
    const current = this.get(this.keyOf(body));
    if (cond.ifMatch !== undefined && (!current || !etagMatches(cond.ifMatch, current.etag))) {
      throw current ? preconditionFailed() : notFound();
    }
    return { doc: this.put(current ? ChangeOp.Replace : ChangeOp.Create, body, current), created: !current };
  }

  replace(key: string, body: JsonObject, cond: WriteConditions = {}): StoredDoc {
    const current = this.get(key);
    if (!current) throw notFound();
    if (cond.ifMatch !== undefined && !etagMatches(cond.ifMatch, current.etag)) throw preconditionFailed();
    const newKey = this.keyOf(body);
    if (newKey === key) return this.put(ChangeOp.Replace, body, current);
    if (canonicalPartitionKey(this.container.partitionKeyOf(body)) !== current.pkKey) {
      throw badRequest("PartitionKey extracted from document doesn't match the one specified in the header.");
    }
    // A body id other than the URL's renames the document (as the service: the rid stays, the old id is gone);
    // the new id must be free in the partition.
    if (this.get(newKey)) throw conflict();
    this.overlay.set(key, null);
    return this.put(ChangeOp.Replace, body, current);
  }

  /** Replaces with a body computed from the current version (patch). */
  update(key: string, next: (current: StoredDoc) => JsonObject, cond: WriteConditions = {}): StoredDoc {
    const current = this.get(key);
    if (!current) throw notFound();
    if (cond.ifMatch !== undefined && !etagMatches(cond.ifMatch, current.etag)) throw preconditionFailed();
    const body = next(current);
    if (this.keyOf(body) !== key) throw badRequest("A patch cannot change the id or the partition key.");
    return this.put(ChangeOp.Replace, body, current);
  }

  delete(key: string, cond: WriteConditions = {}): StoredDoc {
    const current = this.get(key);
    if (!current) throw notFound();
    if (cond.ifMatch !== undefined && !etagMatches(cond.ifMatch, current.etag)) throw preconditionFailed();
    const seq = this.seq + 1;
    this.mutations.push({
      op: ChangeOp.Delete,
      seq,
      doc: this.tombstone(current),
      previousLsn: current.lsn,
      ttlExpired: false,
    });
    this.overlay.set(key, null);
    return current;
  }

  read(key: string): StoredDoc {
    const current = this.get(key);
    if (!current) throw notFound();
    return current;
  }
}

/** If-Match: `*` matches any existing version; otherwise the exact (quoted) etag. */
export function etagMatches(condition: string, etag: string): boolean {
  return condition === "*" || condition === etag;
}
