import { createHash, randomUUID } from "node:crypto";
import { badRequest, type CosmosError, ServiceText, SubStatus } from "../errors.js";
import type { Query } from "../query/ast.js";
import {
  compileTimed,
  parseQuerySpec,
  planQuery,
  type QueryDocument,
  type QueryOutcome,
  runDocumentQuery,
  type SqlQuerySpec,
} from "../query/engine.js";
import type { CompositeIndexPath } from "../query/evaluate.js";
import { isGroupedSelectList, isRewrittenOrderByQuery, isWholeAggregate, printQuery } from "../query/plan.js";
import { type ResumeFilter, rowsAfterResumePoint } from "../query/resume-filter.js";
import { queryCharge } from "../ru/charges.js";
import type { Container, Scope } from "../store/container.js";
import { documentSeqOfRid } from "../store/rid.js";
import type { StoredDoc } from "../store/types.js";
import {
  altContentPath,
  header,
  isTrue,
  jsonBody,
  maxItemCount,
  type Reply,
  type RequestContext,
  requestScope,
} from "./context.js";

/** Query page size when the client names none. */
export const DEFAULT_QUERY_PAGE = 100;

/**
 * Queries are answered whole by the emulator on the SDK's direct path (no 400/1004 "needs a query plan"
 * round trip): cross-partition TOP, ORDER BY, OFFSET/LIMIT, DISTINCT, VALUE aggregates and GROUP BY ... VALUE
 * come back exactly merged, in pages. GROUP BY or aggregates with a select list are the exception: their rows
 * are the SDK's own (see isGroupedSelectList), so a cross-partition one is refused as the gateway refuses it.
 * When the SDK does run the client-side pipeline (that refusal, forceQueryPlan, enableQueryControl), the plan
 * describes the query as the service's does and each range executes the rewritten query (plan.ts), so the
 * SDK's merge produces the same results.
 *
 * Paging: a query's results are computed once and snapshotted; the continuation names the snapshot and
 * an offset, and is bound to the container, the query (text and parameters) and its scope.
 */

interface QuerySnapshot {
  rows: unknown[];
  rowsAreJson: boolean;
  /** EPK of the document each row came from (undefined: not from one document), for range splits. */
  epks: (string | undefined)[];
  expiresAt: number;
}

/** Paged results kept: bounded, time-limited (the clock restarts each time a page is read). */
const SNAPSHOT_LIMIT = 256;
const SNAPSHOT_TTL_MS = 5 * 60 * 1000;
const snapshots = new Map<string, QuerySnapshot>();

/** What a continuation token carries (JSON; opaque to the SDK). */
interface QueryToken {
  /** The container's _rid. */
  rid: string;
  /** Hash of the query text and parameters. */
  q: string;
  /** Hash of the query's shape: as `q`, but for the SDK's per-range ORDER BY query without its WHERE. */
  shape: string;
  /** Which documents the query read (see scopeKey). */
  scope: string;
  snap: string;
  offset: number;
}

/** POST .../docs with x-ms-cosmos-is-query-plan-request: the plan the SDK uses for client-side pipelines. */
export function queryPlan(ctx: RequestContext): Reply {
  const spec = parseQuerySpecFrom(ctx);
  const c = ctx.account.container(ctx.segments[1], ctx.segments[3]);
  return {
    status: 200,
    body: planQuery(spec, { compositeIndexes: compositeIndexesOf(c) }),
    charge: 0,
    kind: "metadata",
  };
}

function parseQuerySpecFrom(ctx: RequestContext): SqlQuerySpec {
  return parseQuerySpec(jsonBody(ctx));
}

/**
 * `x-ms-documentdb-responsecontinuationtokenlimitinkb` (.NET's `ResponseContinuationTokenLimitInKb`): the service
 * takes a whole number of KB from 1 up and answers anything else (0 included) with 400. The emulator's tokens are
 * small and need no limit, so a valid value changes nothing.
 */
function checkContinuationTokenLimit(ctx: RequestContext): void {
  const raw = header(ctx, "x-ms-documentdb-responsecontinuationtokenlimitinkb");
  if (raw === undefined) return;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1) {
    // "continuation token limit specified is not large enough" is the service's wording (Microsoft's
    // CosmosItemTests.NegativeQueryTest matches it).
    throw badRequest(
      `The response continuation token limit specified is not large enough: ResponseContinuationTokenLimitInKb must be a whole number of KB of at least 1; got '${raw}'.`,
    );
  }
}

export function query(ctx: RequestContext, c: Container): Reply | Promise<Reply> {
  checkContinuationTokenLimit(ctx);
  const spec = parseQuerySpecFrom(ctx);
  const parsed = compileTimed(spec);
  const ast = parsed.query;
  const pageSize = maxItemCount(ctx, DEFAULT_QUERY_PAGE);
  const scope = requestScope(ctx, c);
  // Neither a partition key nor a range: a cross-partition query, whatever the container's ranges.
  if (scope === undefined && isGroupedSelectList(ast)) throw notDirectlyServable(spec, c);
  const scopeKey = scopeKeyOf(ctx, scope);
  // A resume point is part of the query: a continuation of one resumed query does not continue another.
  const params =
    JSON.stringify(spec.parameters ?? []) + (spec.resumeFilter ? JSON.stringify(spec.resumeFilter) : "");
  const exact = hash(`${spec.query}\u0000${params}`);
  const shape = isRewrittenOrderByQuery(ast)
    ? hash(`${printQuery({ ...ast, where: undefined })}\u0000${params}`)
    : exact;
  const raw = header(ctx, "x-ms-continuation");
  const token = raw === undefined || raw === "" ? undefined : parseQueryToken(raw);
  const now = Date.now();
  const metricsWanted = isTrue(ctx, "x-ms-documentdb-populatequerymetrics");
  const binding = { q: exact, shape, scope: scopeKey };
  // A scan of one physical range keeps a continuation after a full page; a query of one logical partition (a
  // partition key header) does not: see page(). Nor does an aggregate's one row (isWholeAggregate).
  const singleRange =
    (scope?.ranges.length ?? c.ranges.length) === 1 && scope?.pkKey === undefined && !isWholeAggregate(ast);

  let offset = 0;
  if (token) {
    if (token.rid !== c.rid)
      throw invalidToken(
        "it was issued for another container (or for a container since deleted and re-created).",
      );
    if (token.q !== exact) {
      // The SDK resumes an ORDER BY range with a filter in the rewritten query's WHERE
      // (OrderByQueryRangeStrategy) and skips what it already returned itself: start that query over.
      if (token.shape !== shape || exact === shape)
        throw invalidToken("it was issued for a different query.");
    } else {
      offset = token.offset;
      const snap = snapshots.get(token.snap);
      if (snap && snap.expiresAt > now) {
        if (token.scope === scopeKey)
          return page({ c, snapId: token.snap, snap, offset, pageSize, binding, metricsWanted, singleRange });
        if (!windowWithin(scopeKey, token.scope))
          throw invalidToken("it was issued for a query over other partitions.");
        // The range was split since: continue with the rows of this (narrower) range.
        const { epkMin, epkMax } = epkWindow(scope as Scope);
        const kept: QuerySnapshot = { rows: [], rowsAreJson: snap.rowsAreJson, epks: [], expiresAt: 0 };
        for (let i = offset; i < snap.rows.length; i++) {
          const epk = snap.epks[i];
          if (epk !== undefined && epk >= epkMin && (epkMax === "FF" || epk < epkMax)) {
            kept.rows.push(snap.rows[i]);
            kept.epks.push(epk);
          }
        }
        return page({
          c,
          snapId: newSnapshot(kept, now),
          snap: kept,
          offset: 0,
          pageSize,
          binding,
          metricsWanted,
          singleRange,
        });
      }
      if (token.scope !== scopeKey)
        throw invalidToken("the results it continues have expired and its partition changed.");
    }
  }

  const docs = orderedDocuments(c, scope, scopeKey);
  const outcome = runDocumentQuery(spec, docs, { compositeIndexes: compositeIndexesOf(c), parsed });
  const finish = (outcome: QueryOutcome): Reply => {
    const o = spec.resumeFilter ? resumed(outcome, spec.resumeFilter, ast) : outcome;
    const snap: QuerySnapshot = {
      rows: o.rows,
      rowsAreJson: o.rowsAreJson,
      epks: o.sources.map((i) => (i >= 0 ? docs[i].epk : undefined)),
      expiresAt: 0,
    };
    const scanned = { count: docs.length, bytes: docs.reduce((n, d) => n + d.json.length, 0), outcome: o };
    return page({
      c,
      snapId: newSnapshot(snap, now),
      snap,
      offset,
      pageSize,
      binding,
      scanned,
      metricsWanted,
      singleRange,
    });
  };
  return outcome instanceof Promise ? outcome.then(finish) : finish(outcome);
}

/**
 * The gateway's 400/1004 for a query the SDK must merge itself, the plan in `additionalErrorInfo` (what the SDK
 * checks before it runs its pipeline: `needsQueryPlan` in azure-sdk-for-js sdk/cosmosdb/cosmos/src/queryIterator.ts).
 * A query that has no plan (ORDER BY with GROUP BY, say) is refused with the plan's own 400 instead.
 */
function notDirectlyServable(spec: SqlQuerySpec, c: Container): CosmosError {
  const plan = planQuery(spec, { compositeIndexes: compositeIndexesOf(c) });
  const refusal = badRequest(
    ServiceText.CrossPartitionQueryNotServable,
    SubStatus.CrossPartitionQueryNotServable,
  );
  refusal.additionalErrorInfo = JSON.stringify(plan);
  return refusal;
}

/** The rows of a rewritten ORDER BY query after the resume point the .NET SDK sent (resume-filter.ts). */
function resumed(o: QueryOutcome, filter: ResumeFilter, ast: Query): QueryOutcome {
  if (!isRewrittenOrderByQuery(ast)) throw badRequest("resumeFilter is only valid on an ORDER BY query.");
  const rows = o.rowsAreJson ? o.rows.map((r) => JSON.parse(r as string) as unknown) : o.rows;
  const kept = rowsAfterResumePoint(
    rows,
    filter,
    (ast.orderBy ?? []).map((s) => s.desc),
  );
  return { ...o, rows: kept.map((i) => o.rows[i]), sources: kept.map((i) => o.sources[i]) };
}

function newSnapshot(snap: QuerySnapshot, now: number): string {
  const id = randomUUID();
  snap.expiresAt = now + SNAPSHOT_TTL_MS;
  snapshots.set(id, snap);
  if (snapshots.size > SNAPSHOT_LIMIT) snapshots.delete(snapshots.keys().next().value as string);
  return id;
}

/** What a page is cut from, and how its continuation names the query. */
interface PageRequest {
  c: Container;
  snapId: string;
  snap: QuerySnapshot;
  offset: number;
  pageSize: number;
  /** The token fields that bind a continuation to this container, query and scope. */
  binding: Pick<QueryToken, "q" | "shape" | "scope">;
  /** Set when this request ran the query (for the metrics and the charge). */
  scanned?: ScanFacts;
  metricsWanted: boolean;
  /** The query scans one physical range (no partition key): a full page carries a continuation even when nothing follows. */
  singleRange: boolean;
}

interface ScanFacts {
  count: number;
  bytes: number;
  outcome: QueryOutcome;
}

/** One page of a snapshot. */
function page(req: PageRequest): Reply {
  const { c, snapId, snap, offset, pageSize, binding, scanned, metricsWanted, singleRange } = req;
  const started = performance.now();
  const rows = snap.rows.slice(offset, offset + pageSize);
  const json = snap.rowsAreJson ? rows.join(",") : rows.map((r) => JSON.stringify(r)).join(",");
  const headers: Record<string, string> = {
    "x-ms-content-path": c.rid,
    "x-ms-alt-content-path": altContentPath("dbs", c.databaseId, "colls", c.id),
    "x-ms-item-count": String(rows.length),
  };
  const next = offset + rows.length;
  // A query of one physical range pages as the service's partition does: a page that stops at the page size
  // carries a continuation even when nothing follows (the next page is then empty and final). A query over several
  // ranges is answered whole here (the service's gateway merges them), so its exactly full last page ends it: the
  // SDK's hasMoreResults() turns false without fetching an empty page. A query of one logical partition (the
  // x-ms-documentdb-partitionkey header) ends on its exactly full last page too: Microsoft's
  // CosmosItemTests.ValidateMaxItemCountOnItemQuery reads 6 documents of one key in pages of exactly 1 (and 2) to the
  // end, and the .NET SDK hands an empty last page to its caller (SkipEmptyPageQueryPipelineStage).
  if (next < snap.rows.length || (singleRange && rows.length > 0 && rows.length === pageSize)) {
    snap.expiresAt = Date.now() + SNAPSHOT_TTL_MS;
    const token: QueryToken = { rid: c.rid, ...binding, snap: snapId, offset: next };
    headers["x-ms-continuation"] = JSON.stringify(token);
  } else {
    snapshots.delete(snapId);
  }
  if (metricsWanted) {
    headers["x-ms-documentdb-query-metrics"] = queryMetrics(
      scanned,
      rows.length,
      json.length,
      performance.now() - started,
    );
  }
  return {
    status: 200,
    body: `{"_rid":"${c.rid}","Documents":[${json}],"_count":${rows.length}}`,
    headers,
    charge: queryCharge(scanned?.count ?? 0, json.length),
    kind: "query",
  };
}

/**
 * `x-ms-documentdb-query-metrics` as the service formats it (semicolon-separated key=value, times in ms),
 * which the SDK parses into FeedResponse.queryMetrics (QueryMetrics.createFromDelimitedString).
 */
function queryMetrics(
  scanned: ScanFacts | undefined,
  outputCount: number,
  outputBytes: number,
  writeMs: number,
): string {
  const ms = (x: number) => x.toFixed(2);
  const compileMs = scanned?.outcome.compileMs ?? 0;
  const execMs = scanned?.outcome.executionMs ?? 0;
  const fields: [string, string | number][] = [
    ["totalExecutionTimeInMs", ms(compileMs + execMs + writeMs)],
    ["queryCompileTimeInMs", ms(compileMs)],
    ["queryLogicalPlanBuildTimeInMs", ms(0)],
    ["queryPhysicalPlanBuildTimeInMs", ms(0)],
    ["queryOptimizationTimeInMs", ms(0)],
    ["VMExecutionTimeInMs", ms(execMs)],
    ["indexLookupTimeInMs", ms(0)],
    ["documentLoadTimeInMs", ms(0)],
    ["systemFunctionExecuteTimeInMs", ms(0)],
    ["userFunctionExecuteTimeInMs", ms(0)],
    ["retrievedDocumentCount", scanned?.count ?? 0],
    ["retrievedDocumentSize", scanned?.bytes ?? 0],
    ["outputDocumentCount", outputCount],
    ["outputDocumentSize", outputBytes],
    ["writeOutputTimeInMs", ms(writeMs)],
    ["indexUtilizationRatio", ms(scanned && scanned.count > 0 ? 1 : 0)],
  ];
  return fields.map(([k, v]) => `${k}=${v}`).join(";");
}

function parseQueryToken(raw: string): QueryToken {
  let t: Partial<QueryToken>;
  try {
    t = JSON.parse(raw) as Partial<QueryToken>;
  } catch {
    throw invalidToken("it is not a continuation token this emulator issued.");
  }
  if (
    t === null ||
    typeof t !== "object" ||
    typeof t.rid !== "string" ||
    typeof t.q !== "string" ||
    typeof t.shape !== "string" ||
    typeof t.scope !== "string" ||
    typeof t.snap !== "string" ||
    typeof t.offset !== "number" ||
    !Number.isInteger(t.offset) ||
    t.offset < 0
  ) {
    throw invalidToken("it is not a continuation token this emulator issued.");
  }
  return t as QueryToken;
}

/** The service's wording (SDK users match on "Invalid Continuation Token"). */
function invalidToken(why: string) {
  return badRequest(`Invalid Continuation Token: ${why}`);
}

/**
 * A stable name for the documents a request reads: the whole container, a logical partition, or an EPK
 * window — `range:` when the SDK named a partition key range (which may split or merge under a token).
 */
function scopeKeyOf(ctx: RequestContext, scope: Scope | undefined): string {
  if (!scope) return "all";
  if (scope.pkKey !== undefined) return `pk:${scope.pkKey}`;
  const { epkMin, epkMax } = epkWindow(scope);
  const byRange = header(ctx, "x-ms-documentdb-partitionkeyrangeid") !== undefined;
  return `${byRange ? "range" : "epk"}:${epkMin}-${epkMax}`;
}

/** Whether the window of `inner` (a `range:` scope key) lies inside that of `outer`. */
function windowWithin(inner: string, outer: string): boolean {
  const parse = (key: string) => {
    const m = /^range:([0-9A-F]*)-([0-9A-F]*)$/.exec(key);
    return m ? { min: m[1], max: m[2] } : undefined;
  };
  const a = parse(inner);
  const b = parse(outer);
  if (!a || !b) return false;
  const below = (x: string, y: string) => y === "FF" || (x !== "FF" && x <= y);
  return a.min >= b.min && below(a.max, b.max);
}

function epkWindow(scope: Scope): { epkMin: string; epkMax: string } {
  const lo = scope.ranges[0]?.minInclusive ?? "";
  const hi = scope.ranges.at(-1)?.maxExclusive ?? "FF";
  return {
    epkMin: scope.epkMin !== undefined && scope.epkMin > lo ? scope.epkMin : lo,
    epkMax: scope.epkMax !== undefined && (hi === "FF" || scope.epkMax < hi) ? scope.epkMax : hi,
  };
}

interface OrderedDocument extends QueryDocument {
  epk: string;
}

/** Ordered documents of recent scopes, reused while the container has not changed. */
interface OrderedEntry {
  seq: number;
  layout: string;
  /** The first of these documents to expire (TTL): the list is stale once it has. */
  firstToExpire?: StoredDoc;
  docs: OrderedDocument[];
}
const ORDERED_SCOPES_PER_CONTAINER = 16;
const orderedCache = new WeakMap<Container, Map<string, OrderedEntry>>();

/**
 * The documents of a scope in the order results take without ORDER BY, and ties take with it: by physical
 * range (as the SDK drains ranges), then by _rid (each range's own order). Cached until the next write.
 */
function orderedDocuments(c: Container, scope: Scope | undefined, scopeKey: string): OrderedDocument[] {
  const layout = c.ranges.map((r) => r.id).join(",");
  let byScope = orderedCache.get(c);
  const hit = byScope?.get(scopeKey);
  // (Expiry is judged by the container's own clock: getLive answers only while a document is alive.)
  const fresh = (e: OrderedEntry) => !e.firstToExpire || c.getLive(e.firstToExpire.key) === e.firstToExpire;
  if (hit && hit.seq === c.seq && hit.layout === layout && fresh(hit)) return hit.docs;
  const stored = c.documentsIn(scope);
  const rangeIndex = new Map(c.ranges.map((r, i) => [r, i]));
  const keyed = stored.map((d) => {
    const range = c.rangeFor(d.epk);
    return { d, tieGroup: rangeIndex.get(range) ?? 0, key: `${range.minInclusive}\u0000${ridOrder(d)}` };
  });
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const docs = keyed.map(({ d, tieGroup }) => ({ body: d.body, json: d.json, epk: d.epk, tieGroup }));
  let firstToExpire: StoredDoc | undefined;
  for (const d of stored)
    if (
      d.expiresAtMs !== Number.POSITIVE_INFINITY &&
      (!firstToExpire || d.expiresAtMs < firstToExpire.expiresAtMs)
    )
      firstToExpire = d;
  if (!byScope) {
    byScope = new Map();
    orderedCache.set(c, byScope);
  }
  byScope.delete(scopeKey);
  byScope.set(scopeKey, { seq: c.seq, layout, firstToExpire, docs });
  if (byScope.size > ORDERED_SCOPES_PER_CONTAINER) byScope.delete(byScope.keys().next().value as string);
  return docs;
}

/** Ties are in document-key order (what .NET compares when it resumes an ORDER BY continuation), fixed-width. */
function ridOrder(d: StoredDoc): string {
  const rid = d.body._rid;
  return typeof rid === "string" ? documentSeqOfRid(rid).toString(16).padStart(14, "0") : d.id;
}

function compositeIndexesOf(c: Container): CompositeIndexPath[][] {
  const policy = c.definition.indexingPolicy as { compositeIndexes?: unknown } | undefined;
  const list = policy?.compositeIndexes;
  if (!Array.isArray(list)) return [];
  return list
    .filter((x): x is unknown[] => Array.isArray(x))
    .map((index) =>
      index
        .filter(
          (p): p is { path: string; order?: string } =>
            p !== null && typeof p === "object" && typeof (p as { path?: unknown }).path === "string",
        )
        .map((p) => ({ path: p.path, order: typeof p.order === "string" ? p.order : undefined })),
    );
}

function hash(s: string): string {
  return createHash("sha256").update(s).digest("base64url").slice(0, 22);
}

/** A read feed token: bound to the container and the documents read, positioned by offset. */
interface FeedToken {
  rid: string;
  feed: string;
  offset: number;
}

/** GET /docs without A-IM: the legacy read feed, all documents of the scope, paged. */
export function readFeed(ctx: RequestContext, c: Container): Reply {
  const pageSize = maxItemCount(ctx, DEFAULT_QUERY_PAGE);
  const scope = requestScope(ctx, c);
  const feed = scopeKeyOf(ctx, scope);
  const raw = header(ctx, "x-ms-continuation");
  let offset = 0;
  if (raw !== undefined && raw !== "") {
    let t: Partial<FeedToken> | undefined;
    try {
      t = JSON.parse(raw) as Partial<FeedToken>;
    } catch {
      t = undefined;
    }
    if (
      !t ||
      typeof t !== "object" ||
      typeof t.offset !== "number" ||
      !Number.isInteger(t.offset) ||
      t.offset < 0
    )
      throw invalidToken("it is not a continuation token this emulator issued.");
    if (t.rid !== c.rid) throw invalidToken("it was issued for another container.");
    if (t.feed !== feed) throw invalidToken("it was issued for a read of other partitions.");
    offset = t.offset;
  }
  const docs = orderedDocuments(c, scope, feed);
  const pageDocs = docs.slice(offset, offset + pageSize);
  const headers: Record<string, string> = {
    "x-ms-content-path": c.rid,
    "x-ms-item-count": String(pageDocs.length),
  };
  const next = offset + pageDocs.length;
  if (next < docs.length || (pageDocs.length > 0 && pageDocs.length === pageSize)) {
    const token: FeedToken = { rid: c.rid, feed, offset: next };
    headers["x-ms-continuation"] = JSON.stringify(token);
  }
  const json = pageDocs.map((d) => d.json).join(",");
  return {
    status: 200,
    body: `{"_rid":"${c.rid}","Documents":[${json}],"_count":${pageDocs.length}}`,
    headers,
    charge: queryCharge(pageDocs.length, json.length),
    kind: "readFeed",
  };
}
