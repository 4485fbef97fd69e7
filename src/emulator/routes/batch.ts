import { badRequest, CosmosError } from "../errors.js";
import { patchCharge, pointReadCharge } from "../ru/charges.js";
import { Container, canonicalPartitionKey, type WriteSet } from "../store/container.js";
import { parsePatchRequest } from "../store/patch.js";
import type { JsonObject, StoredDoc } from "../store/types.js";
import { header, jsonBody, type Reply, type RequestContext, requestedRange } from "./context.js";
import { chargeFor, docHeaders, indexedPaths, patchInto, requirePartitionKey } from "./documents.js";

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
export function batch(ctx: RequestContext, c: Container): Reply {
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
