import { badRequest, CosmosError, preconditionFailed, requestTooLarge } from "../errors.js";
import type { PartitionKeyComponent } from "../partitioning/epk.js";
import { patchCharge, pointReadCharge } from "../ru/charges.js";
import { Container, canonicalPartitionKey, type WriteSet } from "../store/container.js";
import { type PatchRequest, parsePatchRequest } from "../store/patch.js";
import type { JsonObject, StoredDoc } from "../store/types.js";
import {
  altContentPath,
  header,
  jsonBody,
  type Reply,
  type RequestContext,
  requestedRange,
} from "./context.js";
import {
  chargeFor,
  docHeaders,
  indexedPaths,
  minimalReturn,
  patchInto,
  requirePartitionKey,
} from "./documents.js";
import { decodeBatchOperations, encodeBatchResults, isHybridRowBody } from "./hybrid-row.js";

type OperationType = "create" | "upsert" | "read" | "replace" | "delete" | "patch";

const OPERATION_TYPES: Record<string, OperationType> = {
  create: "create",
  upsert: "upsert",
  read: "read",
  replace: "replace",
  delete: "delete",
  patch: "patch",
};

/** One operation of a batch or bulk request, checked for shape before any operation runs. */
interface BatchOperation {
  type: OperationType;
  /** The operation's own partition key (`partitionKey`, a JSON array string), when it names one. */
  partitionKey?: PartitionKeyComponent[];
  /** The addressed item (read, replace, delete, patch). */
  id?: string;
  /** The document written (create, upsert, replace). */
  body?: JsonObject;
  patch?: PatchRequest;
  ifMatch?: string;
  ifNoneMatch?: string;
  /** Answer without the document (the .NET SDK's per-operation `minimalReturnPreference`). */
  minimal?: boolean;
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
/** The service's limit of a batch or bulk request's payload (learn.microsoft.com/azure/cosmos-db/concepts-limits). */
export const MAX_BATCH_REQUEST_BYTES = 2 * 1024 * 1024;

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Checks every operation's shape (an object, a known operationType, the id/resourceBody/partitionKey/patch
 * each type needs, string preconditions) before any is applied: a malformed request is a 400 naming the
 * operation's index and writes nothing. What depends on the stored data (409, 404, 412, an invalid id
 * or ttl in a document …) is answered per operation.
 */
function parseOperations(raw: unknown, c: Container, needsOwnPartitionKey: boolean): BatchOperation[] {
  if (!Array.isArray(raw) || raw.length === 0)
    throw badRequest("A batch body must be a non-empty array of operations.");
  if (raw.length > MAX_BATCH_OPERATIONS) {
    throw badRequest(`A batch can have at most ${MAX_BATCH_OPERATIONS} operations; got ${raw.length}.`);
  }
  return raw.map((op: unknown, i) => {
    const fail = (problem: string): never => {
      throw badRequest(`The operation at index ${i} ${problem}`);
    };
    const within = <T>(parse: () => T): T => {
      try {
        return parse();
      } catch (e) {
        if (e instanceof CosmosError) fail(`is invalid: ${e.message}`);
        throw e;
      }
    };
    if (!isObject(op)) return fail(`is not a JSON object: ${JSON.stringify(op) ?? String(op)}.`);
    const typeName = op.operationType;
    const type = typeof typeName === "string" ? OPERATION_TYPES[typeName.toLowerCase()] : undefined;
    if (!type) {
      return fail(
        `has an unknown operationType ${JSON.stringify(typeName) ?? "(none)"}; expected Create, Upsert, Read, Replace, Delete or Patch.`,
      );
    }
    const parsed: BatchOperation = { type };
    if (op.partitionKey !== undefined) {
      if (typeof op.partitionKey !== "string") {
        fail("has a partitionKey that is not a string (a JSON array such as '[\"a\"]').");
      }
      parsed.partitionKey = within(() => c.parsePartitionKeyHeader(op.partitionKey as string));
      if (parsed.partitionKey.length !== c.pk.paths.length) {
        fail(
          `names ${parsed.partitionKey.length} partition key components; the container's key has ${c.pk.paths.length}.`,
        );
      }
    }
    if (op.minimalReturnPreference === true) parsed.minimal = true;
    for (const name of ["ifMatch", "ifNoneMatch"] as const) {
      const v = op[name];
      if (v !== undefined && typeof v !== "string") fail(`has a ${name} that is not a string.`);
      if (typeof v === "string") parsed[name] = v;
    }
    if (type === "create" || type === "upsert" || type === "replace") {
      if (!isObject(op.resourceBody)) fail(`(${typeName}) needs a resourceBody object.`);
      parsed.body = op.resourceBody as JsonObject;
    }
    if (type !== "create" && type !== "upsert") {
      const id = op.id ?? (type === "replace" ? parsed.body?.id : undefined);
      if (typeof id !== "string") fail(`(${typeName}) needs a string id.`);
      parsed.id = id as string;
    }
    if (type === "patch") parsed.patch = within(() => parsePatchRequest(op.resourceBody));
    if (needsOwnPartitionKey && !parsed.partitionKey && !parsed.body) {
      fail(`(${typeName}) needs a partitionKey.`);
    }
    return parsed;
  });
}

function runOperation(ws: WriteSet, c: Container, op: BatchOperation, pkKey: string): OperationResult {
  const body = (): JsonObject => {
    const b = op.body as JsonObject;
    if (canonicalPartitionKey(c.partitionKeyOf(b)) !== pkKey) {
      throw badRequest(
        "PartitionKey extracted from document doesn't match the one specified in the operation.",
      );
    }
    return b;
  };
  const key = () => Container.docKey(pkKey, op.id as string);
  const ok = (statusCode: number, doc: StoredDoc, charge: number): OperationResult => ({
    statusCode,
    requestCharge: charge,
    eTag: doc.etag,
    ...(op.minimal ? {} : { resourceBody: doc.body }),
  });
  switch (op.type) {
    case "create": {
      const doc = ws.create(body());
      return ok(201, doc, chargeFor(c, doc));
    }
    case "upsert": {
      const { doc, created } = ws.upsert(body(), { ifMatch: op.ifMatch });
      return ok(created ? 201 : 200, doc, chargeFor(c, doc));
    }
    case "replace": {
      const doc = ws.replace(key(), body(), { ifMatch: op.ifMatch });
      return ok(200, doc, chargeFor(c, doc));
    }
    case "delete": {
      const old = ws.delete(key(), { ifMatch: op.ifMatch });
      return { statusCode: 204, requestCharge: chargeFor(c, old) };
    }
    case "read": {
      const doc = ws.read(key());
      if (op.ifNoneMatch !== undefined && op.ifNoneMatch === doc.etag) {
        return { statusCode: 304, requestCharge: pointReadCharge(doc.json.length), eTag: doc.etag };
      }
      if (op.ifMatch !== undefined && op.ifMatch !== "*" && op.ifMatch !== doc.etag) {
        throw preconditionFailed();
      }
      return ok(200, doc, pointReadCharge(doc.json.length));
    }
    case "patch": {
      const doc = patchInto(ws, c, key(), op.patch as PatchRequest, op.ifMatch);
      return ok(200, doc, patchCharge(doc.json.length, indexedPaths(c, doc.body)));
    }
  }
}

function failure(e: CosmosError): OperationResult {
  return {
    statusCode: e.status,
    requestCharge: 1,
    ...(e.substatus ? { subStatusCode: e.substatus } : {}),
    resourceBody: { code: e.code, message: e.message },
  };
}

/** The answer for an operation not run because an earlier one failed. */
function dependencyFailed(): OperationResult {
  return {
    statusCode: 424,
    requestCharge: 0,
    resourceBody: { code: "FailedDependency", message: "Another operation in the batch failed." },
  };
}

/**
 * Transactional batch (x-ms-cosmos-batch-atomic: true, the default): all operations commit or none;
 * a failure answers 207 with the failing status and 424 for the others.
 * Bulk (atomic false): each operation on its own. With `x-ms-cosmos-batch-continue-on-error: false` the
 * first failure stops the request: later operations answer 424 and are not applied. `true` — what every
 * SDK sends for bulk (the JS SDK's `continueOnError` defaults to true) — or no header runs them all.
 */
export function batch(ctx: RequestContext, c: Container): Reply {
  // Over the limit the whole request is refused, before any operation is looked at (not 207 with per-operation 413s).
  if (ctx.body.length > MAX_BATCH_REQUEST_BYTES) {
    throw requestTooLarge(
      `A batch or bulk request may carry at most ${MAX_BATCH_REQUEST_BYTES} bytes; got ${ctx.body.length}.`,
    );
  }
  // The .NET SDK sends (and reads) a HybridRow stream, the other SDKs JSON: answer in the request's format.
  const hybrid = isHybridRowBody(ctx.body);
  // `Prefer: return=minimal` on the request: every operation answers without its document (as single writes).
  const minimal = minimalReturn(ctx);
  const requested = (): unknown => {
    const ops = hybrid ? decodeBatchOperations(ctx.body) : jsonBody(ctx);
    if (minimal && Array.isArray(ops))
      for (const op of ops) if (isObject(op)) op.minimalReturnPreference = true;
    return ops;
  };
  const answer = (results: OperationResult[]) => (hybrid ? encodeBatchResults(results) : results);
  const atomic = header(ctx, "x-ms-cosmos-batch-atomic")?.toLowerCase() !== "false";
  const range = requestedRange(ctx, c);
  const headers: Record<string, string> = {
    "x-ms-content-path": c.rid,
    "x-ms-alt-content-path": altContentPath("dbs", c.databaseId, "colls", c.id),
  };
  if (atomic) {
    const pk = requirePartitionKey(ctx, c);
    const headerPk = canonicalPartitionKey(pk);
    const ops = parseOperations(requested(), c, false);
    if (ops.some((op) => op.partitionKey && canonicalPartitionKey(op.partitionKey) !== headerPk)) {
      throw badRequest(
        "One or more operations within the batch request have a different partition key value than the request.",
      );
    }
    // One LSN for the whole batch: the change feed then never splits it (see docs/emulator.md, *LSNs*).
    const ws = c.beginTransaction();
    const results: OperationResult[] = [];
    for (let i = 0; i < ops.length; i++) {
      try {
        results.push(runOperation(ws, c, ops[i], headerPk));
      } catch (e) {
        if (!(e instanceof CosmosError)) throw e; // nothing was committed
        const all = ops.map((_, j) => (j === i ? failure(e) : dependencyFailed()));
        return { status: 207, body: answer(all), headers, charge: 1, kind: "batch" };
      }
    }
    c.commit(ws.mutations, ws.nowMs);
    Object.assign(headers, docHeaders(c, undefined, c.epkOf(pk)));
    delete headers.etag;
    return { status: 200, body: answer(results), headers, charge: sum(results), kind: "batch" };
  }
  const ops = parseOperations(requested(), c, true);
  const continueOnError = header(ctx, "x-ms-cosmos-batch-continue-on-error")?.toLowerCase() !== "false";
  const results: OperationResult[] = [];
  let stopped = false;
  for (const op of ops) {
    if (stopped) {
      results.push(dependencyFailed());
      continue;
    }
    const ws = c.beginWrite();
    let result: OperationResult;
    try {
      const pkKey = canonicalPartitionKey(op.partitionKey ?? c.partitionKeyOf(op.body as JsonObject));
      const r = runOperation(ws, c, op, pkKey);
      if (range && ws.mutations.some((m) => !range.contains(m.doc.epk))) {
        throw badRequest(
          "The operation's partition key does not belong to the partition key range of the request.",
        );
      }
      c.commit(ws.mutations, ws.nowMs);
      result = r;
    } catch (e) {
      if (e instanceof CosmosError) result = failure(e);
      else {
        // Earlier operations are committed already: answer per operation rather than hide them behind a 500.
        console.error("emulator: bulk operation failed unexpectedly:", e);
        result = failure(
          new CosmosError(500, "InternalServerError", `Unexpected error: ${(e as Error)?.message}`),
        );
      }
    }
    results.push(result);
    if (result.statusCode >= 400 && !continueOnError) stopped = true;
  }
  const status = results.every((r) => r.statusCode < 400) ? 200 : 207;
  return { status, body: answer(results), headers, charge: sum(results), kind: "bulk" };
}

function sum(results: OperationResult[]): number {
  return Math.round(results.reduce((s, r) => s + r.requestCharge, 0) * 100) / 100;
}
