import { CosmosFeedError } from "../errors.js";

export { CosmosFeedError } from "../errors.js";

/** Typed errors of the data layer, each with the HTTP status the service used. */
export class CosmosOperationError extends CosmosFeedError {
  /** The HTTP status the service answered (always set for these errors). */
  declare readonly statusCode: number;
  constructor(message: string, statusCode: number, code?: string) {
    super(message, { statusCode, code });
  }
}

/** Create found an item with the same id and partition key (409). */
export class AlreadyExistsError extends CosmosOperationError {
  constructor(
    /** The id of the item that already exists. */
    readonly id: string,
  ) {
    super(`An item with id '${id}' already exists in this partition.`, 409, "Conflict");
  }
}

/** The item does not exist (404). */
export class NotFoundError extends CosmosOperationError {
  constructor(
    /** The id of the missing item. */
    readonly id: string,
  ) {
    super(`Item '${id}' does not exist.`, 404, "NotFound");
  }
}

/** The item changed since it was read (412 on If-Match). */
export class PreconditionFailedError extends CosmosOperationError {
  constructor(
    /** The id of the item whose etag no longer matched. */
    readonly id: string,
  ) {
    super(`Item '${id}' was changed by another writer (etag mismatch).`, 412, "PreconditionFailed");
  }
}

/** An optimistic update kept losing races and gave up (after the last 412). */
export class ConcurrencyConflictError extends CosmosOperationError {
  constructor(
    /** The id of the item that could not be updated. */
    readonly id: string,
    /** How many attempts were made, the first included. */
    readonly attempts: number,
  ) {
    super(
      `Item '${id}' could not be updated: it changed under ${attempts} consecutive attempts.`,
      412,
      "ConcurrencyConflict",
    );
  }
}

/** The HTTP status of an error thrown by `@azure/cosmos` (its `code`), if any. */
export function statusOf(e: unknown): number | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}
