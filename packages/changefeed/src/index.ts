export { type Clock, systemClock } from "@cosmos-feed/core/clock";
export { CosmosFeedError, isCosmosFeedError } from "@cosmos-feed/core/errors";
export { FairShareBalancingStrategy, type FairSharePlan } from "./balancing/fair-share.js";
export { EqualPartitionsBalancingStrategy, type LoadBalancingStrategy } from "./balancing/strategy.js";
export { LeaseLagReadError } from "./estimate-retry.js";
export {
  type EstimatorBounds,
  type EstimatorOptions,
  estimateLag,
  estimateLagSettled,
  estimateLeaseLag,
  type LagEstimate,
  type LeaseLag,
  type LeaseLagFailure,
} from "./estimator.js";
export { databaseRidOf } from "./leases/ids.js";
export { type JavaChangeFeedState, UnsupportedLeaseError } from "./leases/java-state.js";
export {
  type EpkRange,
  type Lease,
  type LeaseDocument,
  LeaseMode,
  type LeaseVersion,
  leasePrefix,
  parseLease,
  toLeaseDocument,
} from "./leases/lease.js";
export { LeaseContainerError, prefixEndpoint } from "./leases/open.js";
export type { LeaseShape } from "./leases/shape.js";
export {
  LEASE_OPERATION_KINDS,
  type LeaseFeed,
  LeaseLostError,
  type LeaseLostReason,
  LeaseOperationCounters,
  type LeaseOperationKind,
  type LeaseStore,
} from "./leases/store.js";
export {
  ChangeFeedDefaults,
  type ChangeFeedProcessorOptions,
  type ErrorPolicy,
  InvalidProcessorOptionsError,
} from "./options.js";
export { MonitoredContainerGoneError } from "./processing/feed-errors.js";
export {
  type ChangeFeedContext,
  type ChangeFeedHandler,
  ChangeFeedProcessor,
  type ChangeFeedProcessorEvents,
  createChangeFeedProcessor,
  type ProcessorInput,
  type StopOptions,
} from "./processor.js";
export type { LeaseCloseReason } from "./supervisor.js";
