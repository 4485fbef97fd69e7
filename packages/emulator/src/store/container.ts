import { badRequest, notFound, partitionKeyRangeGone, requestTooLarge } from "../errors.js";
import { MAX_ITEM_NESTING, nestingDepth } from "../json.js";
import {
  effectivePartitionKey,
  initialBoundaries,
  type PartitionKeyComponent,
  prefixEpkRange,
  splitPoint,
} from "../partitioning/epk.js";
import type { ThroughputBudget } from "../ru/throughput.js";
import { type FeedPage, pageOf, type RangePick } from "./feed-page.js";
import { MAX_ID_BYTES, MAX_RESOURCE_ID_LENGTH, validateId } from "./ids.js";
import { canonicalPartitionKey, documentKey } from "./partition-keys.js";
import type { SavedChange } from "./persistence.js";
import { byLsnThenSeq, firstAfterLsn, firstAtOrAfterTime, PhysicalRange } from "./ranges.js";
import { decodeRid, documentRid, documentSeqOfRid, encodeRid } from "./rid.js";
import {
  ChangeOp,
  type JsonObject,
  type LogEntry,
  type PartitionKeyDefinition,
  type PartitionKeyRangeInfo,
  type StoredDoc,
} from "./types.js";
import { etagMatches, type WriteConditions, WriteSet } from "./write-set.js";

// The container: documents, ranges, reads, feeds, materialize and commit. Ids, ranges, partition keys and the write
// set have their own modules, re-exported here for the emulator's users.
export type { FeedPage };
export {
  MAX_ID_BYTES,
  MAX_RESOURCE_ID_LENGTH,
  validateId,
  PhysicalRange,
  etagMatches,
  type WriteConditions,
  WriteSet,
};

/** The service's item size limit (bytes of the serialized document). */
export const MAX_ITEM_BYTES = 2 * 1024 * 1024;
/**
 * When a document written at `writtenAtMs` expires: exactly `ttl` seconds after the write ("the item expires ttl
 * seconds after its last modified time", learn.microsoft.com/azure/cosmos-db/time-to-live). Counting from `_ts`
 * (whole seconds) instead would cut up to a second off: a document with ttl 1 written at x.9 s would be gone 0.1 s
 * later.
 */
function expiryOf(writtenAtMs: number, ttl: number | undefined): number {
  return ttl === undefined || ttl === -1 ? Number.POSITIVE_INFINITY : writtenAtMs + ttl * 1000;
}

/** An item ttl is a 32-bit signed number of seconds ("Maximum TTL value: 2147483647", concepts-limits). */
export const MAX_TTL_SECONDS = 2_147_483_647;
/** Page size of a change feed read that names no x-ms-max-item-count. */
export const DEFAULT_CHANGE_FEED_PAGE = 100;

const SYSTEM_PROPERTIES = ["_rid", "_self", "_etag", "_attachments", "_ts", "_lsn"] as const;
const NONE: Record<string, never> = Object.freeze({}) as Record<string, never>;

/** Where a change feed or query reads: ranges, optionally narrowed to an EPK window or one logical partition. */
export interface Scope {
  ranges: PhysicalRange[];
  epkMin?: string;
  epkMax?: string;
  pkKey?: string;
}

export interface FeedStart {
  /** Continuation: changes with a higher LSN, per range of the scope (see {@link Container.feedStartLsn}). */
  afterLsn?: Map<PhysicalRange, number>;
  /** Start from a time (ms since epoch): changes written at or after it. */
  sinceMs?: number;
}

/** Writes planned against a consistent view, then committed all at once (or not at all). */
export interface Mutation {
  op: ChangeOp;
  /** Container-wide commit sequence number (the doc's LSN is its range's). */
  seq: number;
  doc: StoredDoc;
  previousLsn: number;
  ttlExpired: boolean;
}

export type CommitSink = (container: Container, entries: LogEntry[]) => void;

export interface ContainerHooks {
  /** Called with the log entries of a commit before memory changes; throwing aborts the commit. */
  persist?: CommitSink;
  /** Called after partition key ranges change (split). */
  rangesChanged?: (container: Container) => void;
  now: () => number;
}

export { canonicalPartitionKey } from "./partition-keys.js";

/** `{}` — the SDK's None (undefined) partition key component. */
function isNone(v: unknown): boolean {
  return v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0;
}

/**
 * A container: documents, logical-partition index, physical ranges with their change logs, TTL index.
 * All mutation goes through {@link WriteSet} + {@link Container.commit}, so batches are atomic.
 */
export class Container {
  readonly docs = new Map<string, StoredDoc>();
  readonly partitions = new Map<string, Map<string, StoredDoc>>();
  /** Log entry of each live document's current version (to mark it superseded). */
  private readonly currentEntry = new Map<string, LogEntry>();
  /** Key of each live document by its `_rid` (a replace may rename a document; its rid stays). */
  private readonly keyOfRid = new Map<string, string>();
  /** Documents with a finite expiry. */
  readonly expiring = new Set<string>();
  ranges: PhysicalRange[];
  readonly goneRanges = new Map<string, string[]>();
  nextRangeId: number;
  /**
   * Container-wide, monotonic sequence number of the last change: the order of commits across ranges (and the
   * key of a saved change). Not an LSN: each physical range numbers its own changes ({@link PhysicalRange.lastLsn}),
   * as the service's partitions do.
   */
  seq = 0;
  docSeq = 0;
  private readonly ridBytes: Buffer;

  constructor(
    readonly databaseId: string,
    readonly id: string,
    readonly rid: string,
    /** The container resource as returned to clients (partitionKey, defaultTtl, _rid, _etag ...). */
    public definition: JsonObject,
    readonly pk: PartitionKeyDefinition,
    layout:
      | { rangeCount: number }
      | { ranges: PartitionKeyRangeInfo[]; gone: Record<string, string[]>; nextRangeId: number },
    public budget: ThroughputBudget | undefined,
    private readonly hooks: ContainerHooks,
  ) {
    this.ridBytes = decodeRid(rid);
    if ("rangeCount" in layout) {
      const bounds = ["", ...initialBoundaries(layout.rangeCount, pk), "FF"];
      this.ranges = [];
      for (let i = 0; i < layout.rangeCount; i++)
        this.ranges.push(new PhysicalRange(String(i), bounds[i], bounds[i + 1], []));
      this.nextRangeId = layout.rangeCount;
    } else {
      this.ranges = layout.ranges.map((r) => {
        const range = new PhysicalRange(r.id, r.minInclusive, r.maxExclusive, r.parents);
        range.lastLsn = r.lastLsn ?? 0;
        return range;
      });
      for (const [id, children] of Object.entries(layout.gone)) this.goneRanges.set(id, children);
      this.nextRangeId = layout.nextRangeId;
    }
  }

  /** `dbs/{db}/colls/{coll}` — the name-based link. */
  get link(): string {
    return `dbs/${this.databaseId}/colls/${this.id}`;
  }

  /** `dbs/{dbRid}/colls/{collRid}/` — the rid-based link. */
  get selfLink(): string {
    return `dbs/${encodeRid(this.ridBytes.subarray(0, 4))}/colls/${this.rid}/`;
  }

  get meterName(): string {
    return `${this.databaseId}/${this.id}`;
  }

  get defaultTtl(): number | undefined {
    const t = this.definition.defaultTtl;
    return typeof t === "number" ? t : undefined;
  }

  // ---------------------------------------------------------------- partitioning

  rangeFor(epk: string): PhysicalRange {
    const rs = this.ranges;
    let lo = 0;
    let hi = rs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (rs[mid].minInclusive <= epk) lo = mid;
      else hi = mid - 1;
    }
    return rs[lo];
  }

  /** The live range with this id, or a 410/1002 if it was split away, or 404. */
  rangeById(id: string): PhysicalRange {
    const r = this.ranges.find((x) => x.id === id);
    if (r) return r;
    // Split away or never known here: the service answers both with 410/1002, so the SDK refreshes its routing map
    // (a 404 would fail the operation instead).
    throw partitionKeyRangeGone(id);
  }

  rangesOverlapping(min: string, max: string): PhysicalRange[] {
    return this.ranges.filter(
      (r) => r.minInclusive < max && (r.maxExclusive === "FF" || r.maxExclusive > min),
    );
  }

  /** Partition key component values of a document, `{}` (None) for a missing path. */
  partitionKeyOf(body: JsonObject): PartitionKeyComponent[] {
    const out: PartitionKeyComponent[] = [];
    for (const path of this.pk.paths) {
      let v: unknown = body;
      for (const seg of path.slice(1).split("/")) {
        if (v === null || typeof v !== "object") {
          v = undefined;
          break;
        }
        v = (v as JsonObject)[seg];
      }
      // A missing path and `{}` are both the None (undefined) component, as the SDK extracts them.
      if (v === undefined || isNone(v)) out.push(NONE);
      else if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean")
        out.push(v);
      else
        throw badRequest(`The partition key value at '${path}' must be a string, number, boolean or null.`);
    }
    return out;
  }

  /** Parses the x-ms-documentdb-partitionkey header (a JSON array; `[]` = None for every path). */
  parsePartitionKeyHeader(header: string): PartitionKeyComponent[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(header);
    } catch {
      throw badRequest(`The partition key header '${header}' is not valid JSON.`);
    }
    if (!Array.isArray(parsed))
      throw badRequest(`The partition key header '${header}' must be a JSON array.`);
    if (parsed.length === 0) return this.pk.paths.map(() => NONE);
    if (parsed.length > this.pk.paths.length) {
      throw badRequest(
        `The partition key header has ${parsed.length} components; the container's partition key has ${this.pk.paths.length}.`,
      );
    }
    if (parsed.length < this.pk.paths.length && this.pk.kind !== "MultiHash") {
      throw badRequest("The partition key supplied has fewer components than defined in the container.");
    }
    return parsed.map((v: unknown) => {
      if (isNone(v)) return NONE;
      if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
      throw badRequest(`The partition key header component ${JSON.stringify(v)} is not a valid key value.`);
    });
  }

  epkOf(values: PartitionKeyComponent[]): string {
    return effectivePartitionKey(values, this.pk);
  }

  /** Scope of a partition-key-addressed read: one logical partition, or an EPK window for a MultiHash prefix. */
  scopeForPartitionKey(values: PartitionKeyComponent[]): Scope {
    const prefix = values.length < this.pk.paths.length ? prefixEpkRange(values, this.pk) : null;
    if (prefix)
      return {
        ranges: this.rangesOverlapping(prefix.min, prefix.max),
        epkMin: prefix.min,
        epkMax: prefix.max,
      };
    const epk = this.epkOf(values);
    return { ranges: [this.rangeFor(epk)], pkKey: canonicalPartitionKey(values) };
  }

  /** Splits a live range in two (at its midpoint unless `at` is given); the parent's id then answers 410/1002. */
  splitRange(rangeId: string, at?: string): PhysicalRange[] {
    const idx = this.ranges.findIndex((r) => r.id === rangeId);
    if (idx < 0) {
      if (this.goneRanges.has(rangeId)) throw partitionKeyRangeGone(rangeId);
      throw notFound(`Partition key range '${rangeId}' does not exist in ${this.link}.`);
    }
    const parent = this.ranges[idx];
    const mid = at ?? splitPoint(parent.minInclusive, parent.maxExclusive, this.pk);
    if (!(mid > parent.minInclusive) || !(parent.maxExclusive === "FF" || mid < parent.maxExclusive)) {
      throw badRequest(
        `Split point '${mid}' is not inside range ${rangeId} [${parent.minInclusive}, ${parent.maxExclusive}).`,
      );
    }
    const lineage = [...parent.parents, parent.id];
    const left = new PhysicalRange(String(this.nextRangeId++), parent.minInclusive, mid, lineage);
    const right = new PhysicalRange(String(this.nextRangeId++), mid, parent.maxExclusive, lineage);
    // Both children go on from the parent's LSN (the service's do: a continuation taken on the parent reads on
    // either child, and the child's session token never goes back).
    left.lastLsn = parent.lastLsn;
    right.lastLsn = parent.lastLsn;
    for (const e of parent.log) {
      const child = e.doc.epk < mid ? left : right;
      child.log.push(e);
      if (e.superseded || e.op === ChangeOp.Delete) child.dead++;
    }
    this.ranges.splice(idx, 1, left, right);
    this.goneRanges.set(parent.id, [left.id, right.id]);
    this.hooks.rangesChanged?.(this);
    return [left, right];
  }

  /**
   * Merges two adjacent live ranges into one with a new id (what the service does when throughput shrinks);
   * both old ids then answer 410/1002. The merged range goes on from the higher of the two parents' LSNs and its
   * changes keep theirs, so a continuation taken on either parent stays valid on the merged range read with that
   * parent's EPK window (the SDKs read it so): the window holds that parent's changes and newer ones only.
   */
  mergeRanges(leftId: string, rightId: string): PhysicalRange {
    const li = this.ranges.findIndex((r) => r.id === leftId);
    const ri = this.ranges.findIndex((r) => r.id === rightId);
    for (const [id, i] of [
      [leftId, li],
      [rightId, ri],
    ] as const) {
      if (i >= 0) continue;
      if (this.goneRanges.has(id)) throw partitionKeyRangeGone(id);
      throw notFound(`Partition key range '${id}' does not exist in ${this.link}.`);
    }
    const left = this.ranges[li];
    const right = this.ranges[ri];
    if (ri !== li + 1 || left.maxExclusive !== right.minInclusive) {
      throw badRequest(
        `Ranges ${leftId} and ${rightId} are not adjacent (left first); only neighbours merge.`,
      );
    }
    const merged = new PhysicalRange(String(this.nextRangeId++), left.minInclusive, right.maxExclusive, [
      ...left.parents,
      left.id,
      ...right.parents,
      right.id,
    ]);
    merged.log = [...left.log, ...right.log].sort(byLsnThenSeq);
    merged.dead = left.dead + right.dead;
    merged.lastLsn = Math.max(left.lastLsn, right.lastLsn);
    merged.timeOrdered = merged.log.every((e, i) => i === 0 || merged.log[i - 1].seq < e.seq);
    this.ranges.splice(li, 2, merged);
    this.goneRanges.set(left.id, [merged.id]);
    this.goneRanges.set(right.id, [merged.id]);
    this.hooks.rangesChanged?.(this);
    return merged;
  }

  layout(): { ranges: PartitionKeyRangeInfo[]; gone: Record<string, string[]>; nextRangeId: number } {
    return {
      ranges: this.ranges.map((r) => ({ ...r.info(), lastLsn: r.lastLsn })),
      gone: Object.fromEntries(this.goneRanges),
      nextRangeId: this.nextRangeId,
    };
  }

  // ---------------------------------------------------------------- reads

  /** The current version of a document, unless TTL already expired it. */
  getLive(key: string, nowMs = this.hooks.now()): StoredDoc | undefined {
    const d = this.docs.get(key);
    return d && d.expiresAtMs > nowMs ? d : undefined;
  }

  /** The id of the live document with this `_rid` (a RID-addressed request names a document by it). */
  idOfRid(rid: string): string | undefined {
    const key = this.keyOfRid.get(rid);
    return key === undefined ? undefined : this.docs.get(key)?.id;
  }

  static docKey(pkKey: string, id: string): string {
    return documentKey(pkKey, id);
  }

  /** Documents visible in a scope (for queries and read feeds). */
  documentsIn(scope: Scope | undefined, nowMs = this.hooks.now()): StoredDoc[] {
    const out: StoredDoc[] = [];
    if (!scope) {
      for (const d of this.docs.values()) if (d.expiresAtMs > nowMs) out.push(d);
      return out;
    }
    if (scope.pkKey !== undefined) {
      for (const d of this.partitions.get(scope.pkKey)?.values() ?? [])
        if (d.expiresAtMs > nowMs) out.push(d);
      return out;
    }
    const min = scope.epkMin;
    const max = scope.epkMax;
    for (const r of scope.ranges) {
      for (const e of r.log) {
        if (e.superseded || e.op === ChangeOp.Delete || e.doc.expiresAtMs <= nowMs) continue;
        const epk = e.doc.epk;
        if ((min !== undefined && epk < min) || (max !== undefined && max !== "FF" && epk >= max)) continue;
        out.push(e.doc);
      }
    }
    return out;
  }

  /**
   * Reads the change feed of a scope. Latest-version mode shows each document once, at its last version,
   * and no deletes; all-versions mode shows every change still retained.
   */
  readFeed(
    scope: Scope,
    start: FeedStart,
    maxItems: number,
    allVersions: boolean,
    nowMs = this.hooks.now(),
  ): FeedPage {
    const min = scope.epkMin;
    const max = scope.epkMax;
    const perRange: RangePick[] = [];
    for (const r of scope.ranges) {
      const log = r.log;
      const after = start.afterLsn?.get(r);
      const since = after === undefined ? start.sinceMs : undefined;
      // A merged range's log is in LSN order, not time order: its time search scans.
      let i = after !== undefined ? firstAfterLsn(log, after) : 0;
      if (since !== undefined && r.timeOrdered) i = firstAtOrAfterTime(log, since);
      const picked: LogEntry[] = [];
      for (; i < log.length; i++) {
        const e = log[i];
        // A full page still takes the changes that share its last LSN (a transactional batch's, or a merged
        // range's two parents' changes numbered alike), so the continuation — an LSN — never falls between them
        // and a transaction is delivered whole, as the service does (the page may exceed maxItems).
        if (picked.length >= maxItems && (picked.length === 0 || e.lsn !== picked[picked.length - 1].lsn))
          break;
        if (!allVersions && (e.superseded || e.op === ChangeOp.Delete || e.doc.expiresAtMs <= nowMs))
          continue;
        if (since !== undefined && e.atMs < since) continue;
        if (scope.pkKey !== undefined && e.doc.pkKey !== scope.pkKey) continue;
        const epk = e.doc.epk;
        if ((min !== undefined && epk < min) || (max !== undefined && max !== "FF" && epk >= max)) continue;
        picked.push(e);
      }
      perRange.push({ range: r, picked, exhausted: i >= log.length, after });
    }
    return pageOf(perRange, maxItems);
  }

  // ---------------------------------------------------------------- writes

  beginWrite(nowMs = this.hooks.now()): WriteSet {
    return new WriteSet(this, nowMs);
  }

  /** A write set whose changes commit with one LSN per range, as a transaction does on the service. */
  beginTransaction(nowMs = this.hooks.now()): WriteSet {
    return new WriteSet(this, nowMs, true);
  }

  /**
   * Builds a stored version of `body` with fresh system properties for commit sequence `seq` (allocated by the
   * write set, which also gives it its range's LSN; the container's counters move only when the write commits).
   * The etag is made from `seq`, unique in the container (LSNs repeat across ranges).
   */
  materialize(body: JsonObject, nowMs: number, previous: StoredDoc | undefined, seq: number): StoredDoc {
    const id = body.id;
    validateId(id);
    const pkValues = this.partitionKeyOf(body);
    const pkKey = canonicalPartitionKey(pkValues);
    const epk = this.epkOf(pkValues);
    const ttl = this.effectiveTtl(body);
    const ts = Math.floor(nowMs / 1000);
    let rid: string;
    if (previous) {
      rid = previous.body._rid as string;
    } else {
      rid = documentRid(this.ridBytes, ++this.docSeq);
    }
    const etag = `"${seq.toString(16).padStart(8, "0")}-0000-0000-0000-${ts.toString(16).padStart(12, "0")}"`;
    const stored: JsonObject = {};
    for (const k in body) {
      if (!(SYSTEM_PROPERTIES as readonly string[]).includes(k)) stored[k] = body[k];
    }
    stored._rid = rid;
    stored._self = `${this.selfLink}docs/${rid}/`;
    stored._etag = etag;
    stored._attachments = "attachments/";
    stored._ts = ts;
    const json = JSON.stringify(stored);
    const depth = nestingDepth(json);
    if (depth > MAX_ITEM_NESTING) {
      throw badRequest(
        `The document nests objects and arrays ${depth} levels deep; the limit is ${MAX_ITEM_NESTING}.`,
      );
    }
    if (Buffer.byteLength(json) > MAX_ITEM_BYTES) {
      throw requestTooLarge(
        `The document is ${Buffer.byteLength(json)} bytes; the limit is ${MAX_ITEM_BYTES} bytes.`,
      );
    }
    return {
      key: Container.docKey(pkKey, id as string),
      id: id as string,
      pkKey,
      pkValues,
      epk,
      body: stored,
      json,
      lsn: 0,
      etag,
      writtenAtMs: nowMs,
      expiresAtMs: expiryOf(nowMs, ttl),
    };
  }

  /** The TTL (seconds) that applies to a document, or undefined/-1 for none. Validates the item's ttl. */
  private effectiveTtl(body: JsonObject): number | undefined {
    const own = body.ttl;
    if (own !== undefined) {
      if (
        typeof own !== "number" ||
        !Number.isInteger(own) ||
        own === 0 ||
        own < -1 ||
        own > MAX_TTL_SECONDS
      ) {
        throw badRequest(
          `The document's ttl must be -1 or an integer number of seconds from 1 to ${MAX_TTL_SECONDS}; got ${JSON.stringify(own)}.`,
        );
      }
    }
    const def = this.defaultTtl;
    if (def === undefined) return undefined; // TTL off for the container: item ttl is ignored
    return (own as number | undefined) ?? def;
  }

  /**
   * Persists, then applies, a write set's mutations: all or nothing. LSNs are handed out only here: a write
   * refused before or during commit leaves the counters where they were, so every LSN a client has seen is on
   * disk and a saved change feed continuation is never "ahead" after a restart.
   */
  commit(mutations: Mutation[], nowMs = this.hooks.now()): void {
    if (mutations.length === 0) return;
    if (mutations[0].seq !== this.seq + 1) {
      // Another write committed between this write set's begin and commit: its numbers are stale.
      throw new Error(
        `write set is stale: its first sequence number is ${mutations[0].seq}, the container is at ${this.seq}`,
      );
    }
    const expected = new Map<PhysicalRange, number>();
    for (const m of mutations) {
      const range = this.rangeFor(m.doc.epk);
      const last = expected.get(range);
      // A range's first change takes its next LSN; each later one the same (a transaction) or the next.
      const ok =
        last === undefined ? m.doc.lsn === range.lastLsn + 1 : m.doc.lsn === last || m.doc.lsn === last + 1;
      // A split or merge between begin and commit: the LSNs were taken from ranges that are gone.
      if (!ok)
        throw new Error(
          `write set is stale: LSN ${m.doc.lsn} where range ${range.id} is at ${last ?? range.lastLsn}`,
        );
      expected.set(range, m.doc.lsn);
    }
    const entries: LogEntry[] = mutations.map((m) => ({
      seq: m.seq,
      lsn: m.doc.lsn,
      op: m.op,
      doc: m.doc,
      previousLsn: m.previousLsn,
      atMs: nowMs,
      ttlExpired: m.ttlExpired,
      superseded: false,
    }));
    this.hooks.persist?.(this, entries);
    for (const e of entries) this.apply(e);
  }

  /** Rebuilds a saved change (from persistence) into memory, without re-validating it. */
  restore(saved: SavedChange): void {
    const body = JSON.parse(saved.json) as JsonObject;
    const pkValues = this.partitionKeyOf(body);
    const pkKey = canonicalPartitionKey(pkValues);
    const ttl =
      this.defaultTtl === undefined ? undefined : ((body.ttl as number | undefined) ?? this.defaultTtl);
    const doc: StoredDoc = {
      key: Container.docKey(pkKey, body.id as string),
      id: body.id as string,
      pkKey,
      pkValues,
      epk: this.epkOf(pkValues),
      body,
      json: saved.json,
      lsn: saved.lsn,
      etag: body._etag as string,
      writtenAtMs: saved.atMs,
      expiresAtMs: expiryOf(saved.atMs, ttl),
    };
    const seq = documentSeqOfRid(body._rid as string);
    if (seq > this.docSeq) this.docSeq = seq;
    this.apply({ ...saved, doc, superseded: false });
  }

  /**
   * Ends a restore: each range's log back in LSN order (a merged range's changes were saved in commit order, its
   * two parents' LSNs interleaved), and each range's LSN at least `floorLsn` — the container-wide LSN of a data
   * folder written before ranges counted their own, so no range hands out an LSN a saved continuation is past.
   */
  finishRestore(floorLsn: number): void {
    for (const r of this.ranges) {
      r.log.sort(byLsnThenSeq);
      r.timeOrdered = r.log.every((e, i) => i === 0 || r.log[i - 1].seq < e.seq);
      if (r.lastLsn < floorLsn) r.lastLsn = floorLsn;
    }
  }

  /** Applies one committed log entry to memory (also used when loading from disk). */
  apply(e: LogEntry): void {
    const key = e.doc.key;
    const rid = e.doc.body._rid as string;
    // A replace that gave the document a new id (the service renames): the old id's version is superseded and goes.
    const renamedFrom = this.keyOfRid.get(rid);
    if (e.op === ChangeOp.Replace && renamedFrom !== undefined && renamedFrom !== key) {
      const old = this.currentEntry.get(renamedFrom);
      if (old) {
        old.superseded = true;
        this.rangeFor(old.doc.epk).dead++;
        this.forget(old.doc);
      }
    }
    const prev = this.currentEntry.get(key);
    const range = this.rangeFor(e.doc.epk);
    if (prev && !prev.superseded) {
      prev.superseded = true;
      this.rangeFor(prev.doc.epk).dead++;
    }
    range.log.push(e);
    if (e.lsn > range.lastLsn) range.lastLsn = e.lsn;
    if (e.seq > this.seq) this.seq = e.seq;
    if (e.op === ChangeOp.Delete) {
      range.dead++;
      this.forget(e.doc);
    } else {
      this.keyOfRid.set(rid, key);
      this.currentEntry.set(key, e);
      this.docs.set(key, e.doc);
      if (Number.isFinite(e.doc.expiresAtMs)) this.expiring.add(key);
      else this.expiring.delete(key);
      let part = this.partitions.get(e.doc.pkKey);
      if (!part) {
        part = new Map();
        this.partitions.set(e.doc.pkKey, part);
      }
      part.set(e.doc.id, e.doc);
    }
  }

  /** Removes a document (deleted, or renamed away from its key) from the live indexes. */
  private forget(doc: StoredDoc): void {
    this.currentEntry.delete(doc.key);
    this.docs.delete(doc.key);
    this.expiring.delete(doc.key);
    if (this.keyOfRid.get(doc.body._rid as string) === doc.key) this.keyOfRid.delete(doc.body._rid as string);
    const part = this.partitions.get(doc.pkKey);
    if (part) {
      part.delete(doc.id);
      if (part.size === 0) this.partitions.delete(doc.pkKey);
    }
  }

  /** Deletes every expired document (a delete with timeToLiveExpired in the all-versions feed). */
  purgeExpired(nowMs = this.hooks.now()): number {
    const ws = this.beginWrite(nowMs);
    for (const key of this.expiring) {
      const d = this.docs.get(key);
      if (d && d.expiresAtMs <= nowMs) ws.expire(d);
    }
    const n = ws.mutations.length;
    this.commit(ws.mutations, nowMs);
    return n;
  }

  /**
   * Drops log entries no feed can return any more: superseded versions and deletes older than the
   * retention window. Returns the sequence numbers dropped (persistence prunes the same).
   */
  compact(retentionMs: number, nowMs = this.hooks.now()): number[] {
    const dropped: number[] = [];
    const cutoff = nowMs - retentionMs;
    for (const r of this.ranges) {
      if (r.dead === 0) continue;
      const kept: LogEntry[] = [];
      let dead = 0;
      for (const e of r.log) {
        const isDead = e.superseded || e.op === ChangeOp.Delete;
        if (isDead && e.atMs < cutoff) dropped.push(e.seq);
        else {
          kept.push(e);
          if (isDead) dead++;
        }
      }
      r.log = kept;
      r.dead = dead;
    }
    return dropped;
  }
}
