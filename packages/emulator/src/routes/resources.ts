import { badRequest, CosmosError } from "../errors.js";
import { parseQuerySpec, runQuery } from "../query/engine.js";
import { RuModel } from "../ru/charges.js";
import { MAX_INITIAL_RANGES, parseThroughputHeaders } from "../store/account.js";
import type { Container } from "../store/container.js";
import {
  altContentPath,
  header,
  isTrue,
  jsonBody,
  jsonObjectBody,
  type Reply,
  type RequestContext,
} from "./context.js";

export { MAX_INITIAL_RANGES };

/** Emulator-only header: number of physical ranges for a new container (overrides the throughput rule). */
export const RANGE_COUNT_HEADER = "x-ms-emulator-partition-count";

const meta = (status: number, body: unknown, headers?: Record<string, string>): Reply => ({
  status,
  body,
  headers,
  charge: RuModel.metadata,
  kind: "metadata",
});

export function readAccount(ctx: RequestContext): Reply {
  const location = [{ name: "Local Region", databaseAccountEndpoint: ctx.origin }];
  return meta(
    200,
    {
      _self: "",
      id: "cosmos-feed-emulator",
      _rid: "cosmos-feed-emulator.documents.azure.com",
      media: "//media/",
      addresses: "//addresses/",
      _dbs: "//dbs/",
      writableLocations: location,
      readableLocations: location,
      enableMultipleWriteLocations: false,
      userReplicationPolicy: { asyncReplication: false, minReplicaSetSize: 1, maxReplicasetSize: 1 },
      userConsistencyPolicy: { defaultConsistencyLevel: "Session" },
      systemReplicationPolicy: { minReplicaSetSize: 1, maxReplicasetSize: 1 },
      readPolicy: { primaryReadCoefficient: 1, secondaryReadCoefficient: 1 },
      queryEngineConfiguration:
        '{"maxSqlQueryInputLength":262144,"maxJoinsPerSqlQuery":5,"maxLogicalAndPerSqlQuery":500,"maxLogicalOrPerSqlQuery":500,"maxUdfRefPerSqlQuery":10,"maxInExpressionItemsCount":16000,"queryMaxInMemorySortDocumentCount":500,"maxQueryRequestTimeoutFraction":0.9,"sqlAllowNonFiniteNumbers":false,"sqlAllowAggregateFunctions":true,"sqlAllowSubQuery":true,"sqlAllowScalarSubQuery":true,"allowNewKeywords":true,"sqlAllowLike":true,"sqlAllowGroupByClause":true,"maxSpatialQueryCells":12,"spatialMaxGeometryPointCount":256,"sqlDisableQueryILOptimization":false,"sqlDisableFilterPlanOptimization":false}',
    },
    { "x-ms-max-media-storage-usage-mb": "10240", "x-ms-media-storage-usage-mb": "0" },
  );
}

function feed(ctx: RequestContext, key: string, all: unknown[]): Reply {
  let items = all;
  if (ctx.method === "POST") {
    if (!isTrue(ctx, "x-ms-documentdb-isquery"))
      throw badRequest("POST on a feed needs x-ms-documentdb-isquery: true.");
    items = runQuery(parseQuerySpec(jsonBody(ctx)), all);
  }
  return meta(200, { _rid: "", [key]: items, _count: items.length });
}

export function databases(ctx: RequestContext): Reply {
  const account = ctx.account;
  if (ctx.method === "POST" && !isTrue(ctx, "x-ms-documentdb-isquery")) {
    const throughput = parseThroughputHeaders(
      header(ctx, "x-ms-offer-throughput"),
      header(ctx, "x-ms-cosmos-offer-autopilot-settings"),
    );
    const db = account.createDatabase(jsonObjectBody(ctx), throughput);
    return meta(201, db.body, { etag: db.body._etag as string });
  }
  return feed(
    ctx,
    "Databases",
    [...account.databases.values()].map((d) => d.body),
  );
}

export function database(ctx: RequestContext, dbId: string): Reply {
  if (ctx.method === "GET") {
    const db = ctx.account.database(dbId);
    return meta(200, db.body, { etag: db.body._etag as string });
  }
  if (ctx.method === "DELETE") {
    ctx.account.deleteDatabase(dbId);
    return meta(204, undefined);
  }
  throw methodNotAllowed(ctx);
}

export function containers(ctx: RequestContext, dbId: string): Reply {
  const account = ctx.account;
  const db = account.database(dbId);
  if (ctx.method === "POST" && !isTrue(ctx, "x-ms-documentdb-isquery")) {
    const throughput = parseThroughputHeaders(
      header(ctx, "x-ms-offer-throughput"),
      header(ctx, "x-ms-cosmos-offer-autopilot-settings"),
    );
    const c = account.createContainer(dbId, jsonObjectBody(ctx), throughput, rangeCountHeader(ctx));
    return meta(201, c.definition, containerHeaders(ctx, c));
  }
  return feed(
    ctx,
    "DocumentCollections",
    [...db.containers.values()].map((c) => c.definition),
  );
}

function rangeCountHeader(ctx: RequestContext): number | undefined {
  const raw = header(ctx, RANGE_COUNT_HEADER);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_INITIAL_RANGES) {
    throw badRequest(
      `${RANGE_COUNT_HEADER} must be an integer from 1 to ${MAX_INITIAL_RANGES}; got '${raw}'.`,
    );
  }
  return n;
}

/**
 * Headers of a container response. Index transformation is instant here, so its progress is always 100 (what
 * the service reports when nothing is pending). With `x-ms-documentdb-populatequotainfo: true` (the SDK's
 * `populateQuotaInfo`) the quota and usage of the container follow, in the service's format (sizes in KB).
 */
function containerHeaders(ctx: RequestContext, c: Container): Record<string, string> {
  const headers: Record<string, string> = {
    etag: c.definition._etag as string,
    "x-ms-content-path": c.rid,
    "x-ms-alt-content-path": altContentPath("dbs", c.databaseId),
    "x-ms-documentdb-collection-index-transformation-progress": "100",
  };
  if (isTrue(ctx, "x-ms-documentdb-populatequotainfo")) {
    headers["x-ms-resource-quota"] = QUOTA;
    headers["x-ms-resource-usage"] = usage(c);
  }
  return headers;
}

/** The service's default collection quota: item size (KB), data and collection size (KB), unlimited count. */
const QUOTA = "documentSize=10240;documentsSize=10485760;documentsCount=-1;collectionSize=10485760;";

function usage(c: Container): string {
  const now = Date.now();
  let count = 0;
  let bytes = 0;
  for (const doc of c.docs.values()) {
    if (doc.expiresAtMs <= now) continue;
    count++;
    bytes += Buffer.byteLength(doc.json);
  }
  const kb = Math.ceil(bytes / 1024);
  return `documentSize=${Math.ceil(kb / 1024)};documentsSize=${kb};documentsCount=${count};collectionSize=${kb};`;
}

export function container(ctx: RequestContext, dbId: string, collId: string): Reply {
  const account = ctx.account;
  switch (ctx.method) {
    case "GET": {
      const c = account.container(dbId, collId);
      return meta(200, c.definition, containerHeaders(ctx, c));
    }
    case "PUT": {
      const c = account.replaceContainer(dbId, collId, jsonObjectBody(ctx));
      return meta(200, c.definition, containerHeaders(ctx, c));
    }
    case "DELETE":
      account.deleteContainer(dbId, collId);
      return meta(204, undefined);
    default:
      throw methodNotAllowed(ctx);
  }
}

/**
 * The container's live partition key ranges. Its etag changes with the layout (a split or merge); read as a change
 * feed (`A-IM: Incremental feed`, as the .NET SDK's PartitionKeyRangeCache reads it, looping until a 304) with the
 * current etag in `If-None-Match`, the answer is 304: nothing changed.
 */
export function partitionKeyRanges(ctx: RequestContext, c: Container): Reply {
  const etag = `"${c.nextRangeId}"`;
  if (header(ctx, "a-im") !== undefined && header(ctx, "if-none-match") === etag) {
    return {
      status: 304,
      headers: { etag, "x-ms-content-path": c.rid },
      charge: RuModel.metadata,
      kind: "metadata",
    };
  }
  const ts = Math.floor(Date.now() / 1000);
  const n = c.ranges.length;
  const ranges = c.ranges.map((r) => ({
    _rid: c.rid,
    id: r.id,
    _etag: `"pkr-${r.id}"`,
    minInclusive: r.minInclusive,
    maxExclusive: r.maxExclusive,
    ridPrefix: Number(r.id),
    _self: `${c.selfLink}pkranges/${r.id}/`,
    throughputFraction: 1 / n,
    status: "online",
    parents: r.parents,
    _ts: ts,
    _lsn: r.lastLsn,
  }));
  return meta(
    200,
    { _rid: c.rid, PartitionKeyRanges: ranges, _count: ranges.length },
    { "x-ms-content-path": c.rid, etag },
  );
}

export function methodNotAllowed(ctx: RequestContext): CosmosError {
  return new CosmosError(
    405,
    "MethodNotAllowed",
    `${ctx.method} is not supported on /${ctx.segments.join("/")}.`,
  );
}
