export { type Clock, systemClock } from "@cosmos-feed/core/clock";
export { CosmosFeedError, isCosmosFeedError } from "@cosmos-feed/core/errors";
export { EqualPartitionsBalancingStrategy, type LoadBalancingStrategy } from "./balancing/strategy.js";
export { type EstimatorOptions, estimateLag, estimateLeaseLag, type LeaseLag } from "./estimator.js";
export { databaseRidOf } from "./leases/ids.js";
export { UnsupportedLeaseError } from "./leases/java-state.js";
export {
  type Lease,
  type LeaseDocument,
  LeaseMode,
  leasePrefix,
  parseLease,
  toLeaseDocument,
} from "./leases/lease.js";
export { LeaseContainerError, prefixEndpoint } from "./leases/open.js";
export { LeaseLostError, LeaseOperationCounters, type LeaseOperationKind } from "./leases/store.js";
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
  type StopOptions,
} from "./processor.js";
export type { LeaseCloseReason } from "./supervisor.js";
