export { CosmosFeedError, isCosmosFeedError } from "../errors.js";
export { createContainerIfNotExists, createDatabaseIfNotExists } from "./ensure.js";
export {
  AlreadyExistsError,
  ConcurrencyConflictError,
  CosmosOperationError,
  NotFoundError,
  PreconditionFailedError,
  statusOf,
} from "./errors.js";
export {
  createItem,
  createWithResult,
  deleteIfMatch,
  type ReadOptions,
  readItem,
  removeItem,
  replaceIfMatch,
  type Stored,
  type UpdateOptions,
  updateItem,
  type WriteResult,
} from "./occ.js";
export {
  abortableSleep,
  defaultOccRetryPolicy,
  OccRetryDefaults,
  OccRetryPolicy,
  type OccRetryPolicyOptions,
  type OccRunOptions,
} from "./retry.js";
export { sessionTokenLsn, sessionTokenRangeId } from "./session.js";
