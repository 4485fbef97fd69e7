import { badRequest } from "../errors.js";
import type { PartitionKeyComponent } from "../partitioning/epk.js";
import { changeFeedCharge } from "../ru/charges.js";
import { type Container, DEFAULT_CHANGE_FEED_PAGE, type FeedStart, type Scope } from "../store/container.js";
import { ChangeOp, type LogEntry } from "../store/types.js";
import {
  altContentPath,
  header,
  maxItemCount,
  type Reply,
  type RequestContext,
  requestScope,
} from "./context.js";
import { currentContinuation, formatContinuation, parseContinuation } from "./feed-continuation.js";

export const LATEST_VERSION_FEED = "incremental feed";
export const ALL_VERSIONS_FEED = "full-fidelity feed";

function scopeOf(ctx: RequestContext, c: Container): Scope {
  // No range named: the whole container (LSN order across ranges).
  return requestScope(ctx, c) ?? { ranges: c.ranges };
}

/** Parses If-None-Match / If-Modified-Since into where to start. `undefined` = start from now. */
function startOf(ctx: RequestContext, scope: Scope, allVersions: boolean): FeedStart | "now" {
  const inm = header(ctx, "if-none-match");
  if (inm === "*") return "now";
  if (inm !== undefined) return { afterLsn: parseContinuation(inm, scope) };
  const ims = header(ctx, "if-modified-since");
  if (ims !== undefined) {
    const ms = Date.parse(ims);
    if (Number.isNaN(ms)) throw badRequest(`If-Modified-Since '${ims}' is not a valid HTTP date.`);
    return { sinceMs: ms };
  }
  if (allVersions) {
    throw badRequest(
      // The service's wording, which SDK users match on.
      "You must read the change feed from within the retention period. All-versions-and-deletes mode starts from now, a time or a continuation, not from the beginning.",
    );
  }
  return {};
}

function withLsn(json: string, lsn: number): string {
  return `${json.slice(0, -1)},"_lsn":${lsn}}`;
}

const OPERATION_NAMES = ["create", "replace", "delete"] as const;

/**
 * A document's partition key as the all-versions feed names it: an object from each partition key path (without its
 * leading `/`) to the value (the .NET SDK reads it as a dictionary: `{"pk1": "value1", "pk2": "value2"}` for a
 * hierarchical key); a missing (None) component has no entry.
 */
function partitionKeyObject(c: Container, values: readonly PartitionKeyComponent[]): Record<string, unknown> {
  const named: Record<string, unknown> = {};
  c.pk.paths.forEach((path, i) => {
    const v = values[i];
    if (v !== null && typeof v === "object") return;
    named[path.slice(1)] = v;
  });
  return named;
}

/**
 * One change as the service shapes it (what the .NET SDK's emulator tests read: github.com/Azure/azure-cosmos-dotnet-v3,
 * GetChangeFeedProcessorBuilderWithAllVersionsAndDeletesTests.cs). A create or a replace (upserts and patches are one
 * of the two) is `{current, metadata}` with no `previous` and no id or partition key in its metadata; a delete is
 * `{current: {}, previous, metadata}` — `current` an object without an id (the test reads `Current.id` and expects
 * null) — whose metadata names the deleted document's id and partition key. A TTL expiry is the same without
 * `previous`: Microsoft's CFP/AllVersionsAndDeletes/BuilderTests.cs (WhenADocumentIsCreatedWithTtlSetThenTheDocumentIs
 * DeletedTestsAsync) asserts `Previous` null on the expiry while WhenADocumentIsCreatedThenUpdatedThenDeletedTestsAsync
 * reads the previous image of a user's delete.
 */
function allVersionsItem(c: Container, e: LogEntry): string {
  const base = {
    operationType: OPERATION_NAMES[e.op],
    lsn: e.lsn,
    crts: Math.floor(e.atMs / 1000),
    previousImageLSN: e.previousLsn,
  };
  if (e.op === ChangeOp.Delete) {
    const metadata = JSON.stringify({
      ...base,
      timeToLiveExpired: e.ttlExpired,
      id: e.doc.id,
      partitionKey: partitionKeyObject(c, e.doc.pkValues),
    });
    if (e.ttlExpired) return `{"current":{},"metadata":${metadata}}`;
    return `{"current":{},"previous":${withLsn(e.doc.json, e.previousLsn)},"metadata":${metadata}}`;
  }
  return `{"current":${withLsn(e.doc.json, e.lsn)},"metadata":${JSON.stringify(base)}}`;
}

/**
 * GET /docs with A-IM: the change feed of a range, an EPK window or a logical partition.
 * 200 with `etag: "<lsn>"` (the next continuation: see feed-continuation.ts) or 304 with the etag still set.
 */
export function changeFeed(ctx: RequestContext, c: Container, aim: string): Reply {
  const mode = aim.toLowerCase();
  if (mode !== LATEST_VERSION_FEED && mode !== ALL_VERSIONS_FEED) {
    throw badRequest(`A-IM '${aim}' is not supported; use 'Incremental Feed' or 'Full-Fidelity Feed'.`);
  }
  const allVersions = mode === ALL_VERSIONS_FEED;
  const scope = scopeOf(ctx, c);
  const start = startOf(ctx, scope, allVersions);
  const max = maxItemCount(ctx, DEFAULT_CHANGE_FEED_PAGE);
  const rangeId = scope.ranges.length === 1 ? scope.ranges[0].id : undefined;
  // Each range's own LSN (several ranges: one token each, as the service joins them).
  const sessionLsn = scope.ranges.reduce((m, r) => Math.max(m, r.lastLsn), 0);
  const headers: Record<string, string> = {
    "x-ms-content-path": c.rid,
    "x-ms-alt-content-path": altContentPath("dbs", c.databaseId, "colls", c.id),
    "x-ms-session-token": scope.ranges.map((r) => `${r.id}:-1#${r.lastLsn}`).join(","),
    lsn: String(sessionLsn),
    // Also on a 304: the .NET SDK parses it on every change feed page (int.Parse, so a missing one throws).
    "x-ms-item-count": "0",
  };
  if (rangeId !== undefined) headers["x-ms-documentdb-partitionkeyrangeid"] = rangeId;
  if (start === "now") {
    headers.etag = currentContinuation(scope);
    return { status: 304, headers, charge: changeFeedCharge(0), kind: "changeFeed" };
  }
  const page = c.readFeed(scope, start, max, allVersions);
  headers.etag = formatContinuation(page.continuation);
  if (page.entries.length === 0)
    return { status: 304, headers, charge: changeFeedCharge(0), kind: "changeFeed" };
  const items = page.entries.map((e) => (allVersions ? allVersionsItem(c, e) : withLsn(e.doc.json, e.lsn)));
  headers["x-ms-item-count"] = String(items.length);
  return {
    status: 200,
    body: `{"_rid":"${c.rid}","Documents":[${items.join(",")}],"_count":${items.length}}`,
    headers,
    charge: changeFeedCharge(items.length),
    kind: "changeFeed",
  };
}
