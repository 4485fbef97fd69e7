import type { Container, ItemDefinition, JSONObject, OperationInput, PartitionKey } from "@azure/cosmos";
import {
  AlreadyExistsError,
  CosmosOperationError,
  NotFoundError,
  PreconditionFailedError,
  statusOf,
} from "./errors.js";
import type { Stored } from "./occ.js";

export type { Stored } from "./occ.js";

/** The service's limit on one transactional batch (operations, all in one logical partition). */
export const MAX_BATCH_OPERATIONS = 100;

/** One write of an all-or-nothing batch: a create, or a replace / delete conditional on the ETag read. */
export type BatchWrite =
  | { kind: "create"; body: ItemDefinition }
  | { kind: "replace"; id: string; body: ItemDefinition; etag: string }
  | { kind: "delete"; id: string; etag: string };

/**
 * Commits `writes` as one transactional batch in `partitionKey`: all of them or none. Returns what each write
 * stored (undefined for a delete), in order. A refused batch throws the typed error of the write that refused
 * it, as the single-item helpers do: 409 AlreadyExistsError, 412 PreconditionFailedError, 404 NotFoundError;
 * anything else a CosmosOperationError with the service's status (429 included, so callers can answer "busy").
 */
export async function commitBatch(
  container: Container,
  partitionKey: PartitionKey,
  writes: BatchWrite[],
  options: { signal?: AbortSignal } = {},
): Promise<(Stored<ItemDefinition> | undefined)[]> {
  if (writes.length === 0 || writes.length > MAX_BATCH_OPERATIONS) {
    throw new RangeError(`A batch holds 1–${MAX_BATCH_OPERATIONS} writes; got ${writes.length}.`);
  }
  const operations: OperationInput[] = writes.map((w): OperationInput => {
    if (w.kind === "create") return { operationType: "Create", resourceBody: w.body as JSONObject };
    if (w.kind === "replace") {
      return { operationType: "Replace", id: w.id, ifMatch: w.etag, resourceBody: w.body as JSONObject };
    }
    // The batch wire format takes ifMatch on every operation (.NET: TransactionalBatchItemRequestOptions.IfMatchEtag
    // on DeleteItem); @azure/cosmos 4.9's DeleteOperationInput type just omits it, and sends the field as given.
    const del = { operationType: "Delete", id: w.id, ifMatch: w.etag } as const;
    return del as OperationInput;
  });
  options.signal?.throwIfAborted();
  let res: Awaited<ReturnType<Container["items"]["batch"]>>;
  try {
    res = await container.items.batch(operations, partitionKey, { abortSignal: options.signal });
  } catch (e) {
    // The SDK wraps a refused batch request (after its own 429 retries) in a plain Error without the status.
    const status = statusOf(e) ?? statusInMessage(e);
    throw new CosmosOperationError(
      `Transactional batch failed: ${e instanceof Error ? e.message : String(e)}`,
      status ?? 500,
      status === 429 ? "TooManyRequests" : "BatchFailed",
    );
  }
  const results = res.result ?? [];
  const failedAt = results.findIndex((r) => r.statusCode >= 400 && r.statusCode !== 424);
  if (failedAt >= 0) {
    const w = writes[failedAt] as BatchWrite;
    const id = w.kind === "create" ? String(w.body.id) : w.id;
    const status = (results[failedAt] as { statusCode: number }).statusCode;
    if (status === 409) throw new AlreadyExistsError(id);
    if (status === 412) throw new PreconditionFailedError(id);
    if (status === 404) throw new NotFoundError(id);
    throw new CosmosOperationError(`Transactional batch write of '${id}' failed with ${status}.`, status);
  }
  if (results.length !== writes.length) {
    throw new CosmosOperationError(
      `Transactional batch answered ${results.length} results for ${writes.length} writes.`,
      500,
      "BatchFailed",
    );
  }
  return results.map((r) => r.resourceBody as Stored<ItemDefinition> | undefined);
}

/** "Request rate is large" survives the SDK's wrapping only in the message. */
function statusInMessage(e: unknown): number | undefined {
  const m = e instanceof Error ? e.message : String(e);
  if (/Request rate is large|\b429\b/i.test(m)) return 429;
  return undefined;
}
