export { FENCE_FIELD, type Fenced, fencedCreate, fencedUpdate, StaleFencingTokenError } from "./fencing.js";
export { type GuardedResponse, guardWithLock, type LockGuardOptions } from "./http-guard.js";
export {
  type AcquireOptions,
  LockClient,
  type LockClientOptions,
  LockDefaults,
  type LockDocument,
  LockHandle,
  LockHeldError,
  LockLostError,
} from "./lock.js";
