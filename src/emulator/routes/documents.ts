import { randomUUID } from "node:crypto";
import { badRequest, CosmosError } from "../errors.js";
import type { PartitionKeyComponent } from "../partitioning/epk.js";
import { conditionHolds, parseQuerySpec, runQuery } from "../query/engine.js";
import { countLeafPaths, patchCharge, pointReadCharge, queryCharge, writeCharge } from "../ru/charges.js";
import type { OperationKind } from "../ru/meter.js";
import { Container, canonicalPartitionKey, type WriteSet } from "../store/container.js";
import { applyPatch, type PatchRequest, parsePatchRequest } from "../store/patch.js";
import type { JsonObject, StoredDoc } from "../store/types.js";
import {
  header,
  isTrue,
  jsonBody,
  jsonObjectBody,
  maxItemCount,
  type Reply,
  type RequestContext,
  requestedRange,
  requestScope,
} from "./context.js";

const PK_HEADER = "x-ms-documentdb-partitionkey";
/** Query page size when the client names none. */
export const DEFAULT_QUERY_PAGE = 100;

/** Response headers for an operation on one document. */
export function docHeaders(c: Container, doc: StoredDoc | undefined, epk?: string): Record<string, string> {
  const range = c.rangeFor(doc?.epk ?? epk ?? "");
  const h: Record<string, string> = {
    "x-ms-session-token": `${range.id}:-1#${range.lastLsn}`,
    "x-ms-content-path": c.rid,
    "x-ms-alt-content-path": c.link,
    lsn: String(c.lsn),
  };
  if (doc) h.etag = doc.etag;
  return h;
}

function indexedPaths(c: Container, body: JsonObject): number {
  const policy = c.definition.indexingPolicy as { indexingMode?: string } | undefined;
  return policy?.indexingMode === "none" ? 0 : countLeafPaths(body);
}

function chargeFor(c: Container, doc: StoredDoc): number {
  return writeCharge(doc.json.length, indexedPaths(c, doc.body));
}

/** The answer to a write of one document: the stored version, its headers and charge. */
function writeReply(
  c: Container,
  doc: StoredDoc,
  status: number,
  kind: OperationKind,
  charge = chargeFor(c, doc),
): Reply {
  return { status, body: doc.json, headers: docHeaders(c, doc), charge, kind };
}

/** The partition key the request names in its header, checked against the container definition. */
function headerPartitionKey(ctx: RequestContext, c: Container): PartitionKeyComponent[] | undefined {
  const raw = header(ctx, PK_HEADER);
  return raw === undefined ? undefined : c.parsePartitionKeyHeader(raw);
}

function requirePartitionKey(ctx: RequestContext, c: Container): PartitionKeyComponent[] {
  const pk = headerPartitionKey(ctx, c);
  if (!pk)
    throw badRequest(
      "PartitionKey value must be supplied for this operation (x-ms-documentdb-partitionkey).",
    );
  if (pk.length !== c.pk.paths.length) {
    throw badRequest("The partition key supplied has fewer components than defined in the container.");
  }
  return pk;
}

function checkBodyMatchesHeader(ctx: RequestContext, c: Container, body: JsonObject): void {
  const pk = headerPartitionKey(ctx, c);
  if (pk && canonicalPartitionKey(pk) !== canonicalPartitionKey(c.partitionKeyOf(body))) {
    throw badRequest("PartitionKey extracted from document doesn't match the one specified in the header.");
  }
}

/** POST /docs: create, upsert, query, query plan, batch or bulk. */
export function postDocuments(ctx: RequestContext, c: Container): Reply {
  if (header(ctx, "x-ms-cosmos-is-query-plan-request")?.toLowerCase() === "true") return queryPlan(ctx);
  if (
    isTrue(ctx, "x-ms-documentdb-isquery") ||
    header(ctx, "content-type")?.startsWith("application/query+json")
  ) {
    return query(ctx, c);
  }
  if (isTrue(ctx, "x-ms-cosmos-is-batch-request")) return batch(ctx, c);
  const body = jsonObjectBody(ctx);
  checkBodyMatchesHeader(ctx, c, body);
  const ws = c.beginWrite();
  if (isTrue(ctx, "x-ms-documentdb-is-upsert")) {
    const { doc, created } = ws.upsert(body, { ifMatch: header(ctx, "if-match") });
    c.commit(ws.mutations, ws.nowMs);
    return writeReply(c, doc, created ? 201 : 200, "upsert");
  }
  const doc = ws.create(body);
  c.commit(ws.mutations, ws.nowMs);
  return writeReply(c, doc, 201, "create");
}

/** GET/PUT/PATCH/DELETE /docs/{id}. */
export function documentOperation(ctx: RequestContext, c: Container, id: string): Reply {
  const pk = requirePartitionKey(ctx, c);
  const key = Container.docKey(canonicalPartitionKey(pk), id);
  const ifMatch = header(ctx, "if-match");
  switch (ctx.method) {
    case "GET": {
      const doc = c.getLive(key);
      if (!doc)
        throw new CosmosError(404, "NotFound", "Entity with the specified id does not exist in the system.");
      const charge = pointReadCharge(doc.json.length);
      if (header(ctx, "if-none-match") === doc.etag) {
        return { status: 304, headers: docHeaders(c, doc), charge, kind: "read" };
      }
      return { status: 200, body: doc.json, headers: docHeaders(c, doc), charge, kind: "read" };
    }
    case "PUT": {
      const body = jsonObjectBody(ctx);
      // The service refuses a body in another logical partition (400) before looking the item up.
      checkBodyMatchesHeader(ctx, c, body);
      const ws = c.beginWrite();
      const doc = ws.replace(key, body, { ifMatch });
      c.commit(ws.mutations, ws.nowMs);
      return writeReply(c, doc, 200, "replace");
    }
    case "PATCH": {
      const patch = parsePatchRequest(jsonBody(ctx));
      const ws = c.beginWrite();
      const doc = patchInto(ws, c, key, patch, ifMatch);
      c.commit(ws.mutations, ws.nowMs);
      return writeReply(c, doc, 200, "patch", patchCharge(doc.json.length, indexedPaths(c, doc.body)));
    }
    case "DELETE": {
      const ws = c.beginWrite();
      const old = ws.delete(key, { ifMatch });
      c.commit(ws.mutations, ws.nowMs);
      return {
        status: 204,
        headers: docHeaders(c, undefined, old.epk),
        charge: chargeFor(c, old),
        kind: "delete",
      };
    }
    default:
      throw new CosmosError(405, "MethodNotAllowed", `${ctx.method} is not supported on a document.`);
  }
}

function patchInto(
  ws: WriteSet,
  c: Container,
  key: string,
  patch: PatchRequest,
  ifMatch: string | undefined,
): StoredDoc {
  for (const op of patch.operations) {
    for (const path of [op.path, op.from]) {
      if (path === undefined) continue;
      const top = path.split("/")[1];
      if (
        top === "id" ||
        top.startsWith("_") ||
        c.pk.paths.some((p) => path === p || path.startsWith(`${p}/`) || p.startsWith(`${path}/`))
      ) {
        throw badRequest(
          `Patch cannot modify '${path}': id, system properties and the partition key are immutable.`,
        );
      }
    }
  }
  return ws.update(
    key,
    (current) => {
      if (patch.condition !== undefined && !conditionHolds(patch.condition, current.body)) {
        throw new CosmosError(
          412,
          "PreconditionFailed",
          `The patch condition '${patch.condition}' is not met by the current document.`,
        );
      }
      return applyPatch(current.body, patch.operations);
    },
    { ifMatch },
  );
}

// ------------------------------------------------------------------ queries

interface QuerySnapshot {
  results: unknown[];
  expiresAt: number;
}

/** Paged query results are snapshotted so later pages are stable and cheap (bounded, time-limited). */
const SNAPSHOT_LIMIT = 256;
const SNAPSHOT_TTL_MS = 5 * 60 * 1000;
const snapshots = new Map<string, QuerySnapshot>();

function queryPlan(ctx: RequestContext): Reply {
  const spec = parseQuerySpec(jsonBody(ctx));
  return {
    status: 200,
    body: {
      partitionedQueryExecutionInfoVersion: 2,
      queryInfo: {
        distinctType: "None",
        top: null,
        offset: null,
        limit: null,
        orderBy: [],
        orderByExpressions: [],
        groupByExpressions: [],
        groupByAliases: [],
        aggregates: [],
        groupByAliasToAggregateType: {},
        rewrittenQuery: "",
        hasSelectValue: /^\s*select\s+(top\s+\d+\s+)?(distinct\s+)?value\b/i.test(spec.query),
        dCountInfo: null,
        hasNonStreamingOrderBy: false,
      },
      queryRanges: [{ min: "", max: "FF", isMinInclusive: true, isMaxInclusive: false }],
    },
    charge: 0,
    kind: "metadata",
  };
}

function query(ctx: RequestContext, c: Container): Reply {
  const spec = parseQuerySpec(jsonBody(ctx));
  const pageSize = maxItemCount(ctx, DEFAULT_QUERY_PAGE);
  const token = header(ctx, "x-ms-continuation");
  const now = Date.now();
  let results: unknown[];
  let offset = 0;
  let scanned = 0;
  let snapshotId: string | undefined;
  if (token) {
    const parsed = parseQueryToken(token);
    offset = parsed.offset;
    snapshotId = parsed.id;
    const snap = snapshots.get(parsed.id);
    if (snap && snap.expiresAt > now) {
      results = snap.results;
    } else {
      const docs = c.documentsIn(requestScope(ctx, c));
      scanned = docs.length;
      results = runQuery(
        spec,
        docs.map((d) => d.body),
      );
    }
  } else {
    const docs = c.documentsIn(requestScope(ctx, c));
    scanned = docs.length;
    results = runQuery(
      spec,
      docs.map((d) => d.body),
    );
  }
  const page = results.slice(offset, offset + pageSize);
  const headers: Record<string, string> = { "x-ms-content-path": c.rid, "x-ms-alt-content-path": c.link };
  const next = offset + page.length;
  if (next < results.length) {
    if (!snapshotId || !snapshots.has(snapshotId)) {
      snapshotId = randomUUID();
      snapshots.set(snapshotId, { results, expiresAt: now + SNAPSHOT_TTL_MS });
      if (snapshots.size > SNAPSHOT_LIMIT) snapshots.delete(snapshots.keys().next().value as string);
    }
    headers["x-ms-continuation"] = JSON.stringify({ snapshot: snapshotId, offset: next });
  } else if (snapshotId) {
    snapshots.delete(snapshotId);
  }
  const docsJson = JSON.stringify(page);
  return {
    status: 200,
    body: `{"_rid":"${c.rid}","Documents":${docsJson},"_count":${page.length}}`,
    headers: { ...headers, "x-ms-item-count": String(page.length) },
    charge: queryCharge(scanned, page.length === 0 ? 0 : docsJson.length),
    kind: "query",
  };
}

function parseQueryToken(token: string): { id: string; offset: number } {
  try {
    const t = JSON.parse(token) as { snapshot?: unknown; offset?: unknown };
    if (
      typeof t.snapshot === "string" &&
      typeof t.offset === "number" &&
      Number.isInteger(t.offset) &&
      t.offset >= 0
    ) {
      return { id: t.snapshot, offset: t.offset };
    }
  } catch {
    // fall through
  }
  throw badRequest(`The continuation token '${token}' is not a token this emulator issued.`);
}

/** GET /docs without A-IM: the legacy read feed, all documents of the scope, paged. */
export function readFeed(ctx: RequestContext, c: Container): Reply {
  const pageSize = maxItemCount(ctx, DEFAULT_QUERY_PAGE);
  const token = header(ctx, "x-ms-continuation");
  const offset = token === undefined ? 0 : Number(token);
  if (!Number.isInteger(offset) || offset < 0)
    throw badRequest(`The continuation token '${token}' is not valid.`);
  const docs = c.documentsIn(requestScope(ctx, c));
  const page = docs.slice(offset, offset + pageSize);
  const headers: Record<string, string> = { "x-ms-content-path": c.rid };
  if (offset + page.length < docs.length) headers["x-ms-continuation"] = String(offset + page.length);
  const json = page.map((d) => d.json).join(",");
  return {
    status: 200,
    body: `{"_rid":"${c.rid}","Documents":[${json}],"_count":${page.length}}`,
    headers,
    charge: queryCharge(page.length, json.length),
    kind: "readFeed",
  };
}

// ------------------------------------------------------------------ batch and bulk

interface BatchOperation {
  operationType?: string;
  id?: string;
  partitionKey?: string;
  resourceBody?: unknown;
  ifMatch?: string;
  ifNoneMatch?: string;
}

interface OperationResult {
  statusCode: number;
  requestCharge: number;
  eTag?: string;
  resourceBody?: unknown;
  subStatusCode?: number;
  retryAfterMilliseconds?: number;
}

/** The service's limit of operations in one batch request. */
export const MAX_BATCH_OPERATIONS = 100;

function runOperation(
  ws: WriteSet,
  c: Container,
  op: BatchOperation,
  headerPk: string | undefined,
): OperationResult {
  const type = (op.operationType ?? "").toLowerCase();
  let pkKey: string;
  if (op.partitionKey !== undefined) {
    pkKey = canonicalPartitionKey(c.parsePartitionKeyHeader(op.partitionKey));
  } else if (headerPk !== undefined) {
    pkKey = headerPk;
  } else if (op.resourceBody && typeof op.resourceBody === "object" && !Array.isArray(op.resourceBody)) {
    pkKey = canonicalPartitionKey(c.partitionKeyOf(op.resourceBody as JsonObject));
  } else {
    throw badRequest(`Operation ${type} needs a partitionKey.`);
  }
  const body = () => {
    if (!op.resourceBody || typeof op.resourceBody !== "object" || Array.isArray(op.resourceBody)) {
      throw badRequest(`Operation ${type} needs a resourceBody object.`);
    }
    const b = op.resourceBody as JsonObject;
    if (canonicalPartitionKey(c.partitionKeyOf(b)) !== pkKey) {
      throw badRequest(
        "PartitionKey extracted from document doesn't match the one specified in the operation.",
      );
    }
    return b;
  };
  const keyOf = () => {
    const id = op.id ?? (op.resourceBody as JsonObject | undefined)?.id;
    if (typeof id !== "string") throw badRequest(`Operation ${type} needs an id.`);
    return Container.docKey(pkKey, id);
  };
  const ok = (statusCode: number, doc: StoredDoc, charge: number, withBody = true): OperationResult => ({
    statusCode,
    requestCharge: charge,
    eTag: doc.etag,
    ...(withBody ? { resourceBody: doc.body } : {}),
  });
  switch (type) {
    case "create": {
      const doc = ws.create(body());
      return ok(201, doc, chargeFor(c, doc));
    }
    case "upsert": {
      const { doc, created } = ws.upsert(body(), { ifMatch: op.ifMatch });
      return ok(created ? 201 : 200, doc, chargeFor(c, doc));
    }
    case "replace": {
      const doc = ws.replace(keyOf(), body(), { ifMatch: op.ifMatch });
      return ok(200, doc, chargeFor(c, doc));
    }
    case "delete": {
      const old = ws.delete(keyOf(), { ifMatch: op.ifMatch });
      return { statusCode: 204, requestCharge: chargeFor(c, old) };
    }
    case "read": {
      const doc = ws.read(keyOf());
      if (op.ifNoneMatch !== undefined && op.ifNoneMatch === doc.etag) {
        return { statusCode: 304, requestCharge: pointReadCharge(doc.json.length), eTag: doc.etag };
      }
      if (op.ifMatch !== undefined && op.ifMatch !== "*" && op.ifMatch !== doc.etag) {
        throw new CosmosError(412, "PreconditionFailed", "The etag does not match.");
      }
      return ok(200, doc, pointReadCharge(doc.json.length));
    }
    case "patch": {
      const doc = patchInto(ws, c, keyOf(), parsePatchRequest(op.resourceBody), op.ifMatch);
      return ok(200, doc, patchCharge(doc.json.length, indexedPaths(c, doc.body)));
    }
    default:
      throw badRequest(`Unknown batch operationType '${op.operationType}'.`);
  }
}

function failure(e: unknown): OperationResult {
  if (e instanceof CosmosError) {
    return {
      statusCode: e.status,
      requestCharge: 1,
      ...(e.substatus ? { subStatusCode: e.substatus } : {}),
      resourceBody: { code: e.code, message: e.message },
    };
  }
  throw e;
}

/**
 * Transactional batch (x-ms-cosmos-batch-atomic: true, the default): all operations commit or none;
 * a failure answers 207 with the failing status and 424 for the others.
 * Bulk (atomic false): each operation on its own, continue on error.
 */
function batch(ctx: RequestContext, c: Container): Reply {
  const ops = jsonBody(ctx);
  if (!Array.isArray(ops) || ops.length === 0)
    throw badRequest("A batch body must be a non-empty array of operations.");
  if (ops.length > MAX_BATCH_OPERATIONS) {
    throw badRequest(`A batch can have at most ${MAX_BATCH_OPERATIONS} operations; got ${ops.length}.`);
  }
  const atomic = header(ctx, "x-ms-cosmos-batch-atomic")?.toLowerCase() !== "false";
  const range = requestedRange(ctx, c);
  const headers: Record<string, string> = { "x-ms-content-path": c.rid, "x-ms-alt-content-path": c.link };
  if (atomic) {
    const pk = requirePartitionKey(ctx, c);
    const headerPk = canonicalPartitionKey(pk);
    for (const op of ops as BatchOperation[]) {
      if (
        op?.partitionKey !== undefined &&
        canonicalPartitionKey(c.parsePartitionKeyHeader(op.partitionKey)) !== headerPk
      ) {
        throw badRequest(
          "One or more operations within the batch request have a different partition key value than the request.",
        );
      }
    }
    const ws = c.beginWrite();
    const results: OperationResult[] = [];
    for (let i = 0; i < ops.length; i++) {
      try {
        results.push(runOperation(ws, c, ops[i] as BatchOperation, headerPk));
      } catch (e) {
        const failed = failure(e);
        const all: OperationResult[] = ops.map((_, j) =>
          j === i
            ? failed
            : {
                statusCode: 424,
                requestCharge: 0,
                resourceBody: { code: "FailedDependency", message: "Another operation in the batch failed." },
              },
        );
        return { status: 207, body: all, headers, charge: 1, kind: "batch" };
      }
    }
    c.commit(ws.mutations, ws.nowMs);
    Object.assign(headers, docHeaders(c, undefined, c.epkOf(pk)));
    delete headers.etag;
    return { status: 200, body: results, headers, charge: sum(results), kind: "batch" };
  }
  const results: OperationResult[] = [];
  for (const op of ops as BatchOperation[]) {
    const ws = c.beginWrite();
    try {
      const r = runOperation(ws, c, op, undefined);
      if (range && ws.mutations.some((m) => !range.contains(m.doc.epk))) {
        throw badRequest(
          "The operation's partition key does not belong to the partition key range of the request.",
        );
      }
      c.commit(ws.mutations, ws.nowMs);
      results.push(r);
    } catch (e) {
      results.push(failure(e));
    }
  }
  const status = results.every((r) => r.statusCode < 400) ? 200 : 207;
  return { status, body: results, headers, charge: sum(results), kind: "bulk" };
}

function sum(results: OperationResult[]): number {
  return Math.round(results.reduce((s, r) => s + r.requestCharge, 0) * 100) / 100;
}
