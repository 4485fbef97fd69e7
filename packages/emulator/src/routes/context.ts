import type { IncomingHttpHeaders } from "node:http";
import { badRequest } from "../errors.js";
import { parseJsonBody } from "../json.js";
import type { OperationKind } from "../ru/meter.js";
import type { Account } from "../store/account.js";
import type { Container, PhysicalRange, Scope } from "../store/container.js";

/** Everything a route handler sees of one request. */
export interface RequestContext {
  method: string;
  segments: string[];
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** `http://host:port/` as the client reached us (from the Host header). */
  origin: string;
  account: Account;
  activityId: string;
  /** The request named its database by `_rid` (routes/rid-paths.ts): `segments` carry the names it resolved to. */
  byRid?: boolean;
}

/** A handler's answer: status, body (object → JSON, string → already-serialized JSON), headers, RU charge. */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  charge?: number;
  kind?: OperationKind;
}

export function header(ctx: RequestContext, name: string): string | undefined {
  const v = ctx.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function isTrue(ctx: RequestContext, name: string): boolean {
  return header(ctx, name)?.toLowerCase() === "true";
}

/** Parses the request body as JSON; a missing or malformed body is a 400. */
export function jsonBody(ctx: RequestContext): unknown {
  if (ctx.body.length === 0) throw badRequest("The request body is empty; a JSON body is required.");
  return parseJsonBody(ctx.body);
}

export function jsonObjectBody(ctx: RequestContext): Record<string, unknown> {
  const v = jsonBody(ctx);
  if (v === null || typeof v !== "object" || Array.isArray(v))
    throw badRequest("The request body must be a JSON object.");
  return v as Record<string, unknown>;
}

/** x-ms-max-item-count: a positive integer, or -1/absent for the default. */
export function maxItemCount(ctx: RequestContext, fallback: number): number {
  const raw = header(ctx, "x-ms-max-item-count");
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n === 0 || n < -1) {
    throw badRequest(`x-ms-max-item-count must be a positive integer or -1; got '${raw}'.`);
  }
  return n === -1 ? fallback : n;
}

/** The range named by x-ms-documentdb-partitionkeyrangeid (`id` or `collRid,id`); 410/1002 if split away. */
export function requestedRange(ctx: RequestContext, c: Container): PhysicalRange | undefined {
  const raw = header(ctx, "x-ms-documentdb-partitionkeyrangeid");
  return raw === undefined ? undefined : c.rangeById(raw.slice(raw.lastIndexOf(",") + 1));
}

/**
 * What a query, read feed or change feed request reads: a range (± an EPK window), a logical partition or
 * hierarchical-key prefix, an EPK window, or — undefined — the whole container.
 */
export function requestScope(ctx: RequestContext, c: Container): Scope | undefined {
  const min = header(ctx, "x-ms-start-epk");
  const max = header(ctx, "x-ms-end-epk");
  const range = requestedRange(ctx, c);
  if (range) return { ranges: [range], epkMin: min, epkMax: max };
  const pk = header(ctx, "x-ms-documentdb-partitionkey");
  if (pk !== undefined) return c.scopeForPartitionKey(c.parsePartitionKeyHeader(pk));
  if (min !== undefined && max !== undefined)
    return { ranges: c.rangesOverlapping(min, max), epkMin: min, epkMax: max };
  return undefined;
}

/**
 * The value of `x-ms-alt-content-path` (the name-based path of the owning resource, e.g.
 * `dbs/{db}/colls/{c}`) for raw ids: each segment percent-encoded (UTF-8), so any id is a valid header value.
 * The service sends it escaped: the .NET SDK unescapes it (Uri.UnescapeDataString in
 * Azure/azure-cosmos-dotnet-v3 Microsoft.Azure.Cosmos/src/Headers/HttpResponseHeadersWrapper.cs).
 * Letters, digits and `-_.!~*'()` come out unchanged.
 */
export function altContentPath(...segments: string[]): string {
  return segments.map(encodeURIComponent).join("/");
}
