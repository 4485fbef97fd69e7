import { randomUUID } from "node:crypto";
import { badRequest } from "../errors.js";
import { parseQuerySpec, runQuery } from "../query/engine.js";
import { queryCharge } from "../ru/charges.js";
import type { Container } from "../store/container.js";
import { header, jsonBody, maxItemCount, type Reply, type RequestContext, requestScope } from "./context.js";

/** Query page size when the client names none. */
export const DEFAULT_QUERY_PAGE = 100;

interface QuerySnapshot {
  results: unknown[];
  expiresAt: number;
}

/** Paged query results are snapshotted so later pages are stable and cheap (bounded, time-limited). */
const SNAPSHOT_LIMIT = 256;
const SNAPSHOT_TTL_MS = 5 * 60 * 1000;
const snapshots = new Map<string, QuerySnapshot>();

export function queryPlan(ctx: RequestContext): Reply {
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

export function query(ctx: RequestContext, c: Container): Reply {
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
