export { CosmosFeedError } from "@cosmos-feed/core/errors";
export {
  InvalidLockNameError,
  LockContainerError,
  LockHeldError,
  LockLostError,
  type LockLostReason,
} from "./errors.js";
export {
  FENCE_FIELD,
  type Fenced,
  type FencedUpdateOptions,
  fencedCreate,
  fencedRead,
  fencedUpdate,
  StaleFencingTokenError,
} from "./fencing.js";
export {
  type FencingLock,
  type LockDocument,
  LockHandle,
  type LockHandleContext,
  lockExpiresAtMs,
} from "./handle.js";
export { type GuardedResponse, guardWithLock, type LockGuardOptions } from "./http-guard.js";
export { LockClient } from "./lock.js";
export { MAX_LOCK_NAME_LENGTH, validateLockName } from "./names.js";
export {
  type AcquireOptions,
  type LockClientOptions,
  LockDefaults,
  systemLockClock,
  type TryAcquireOptions,
} from "./options.js";
export { type LockQueueDocument, type LockTicket, QUEUE_ID_PREFIX } from "./queue.js";
