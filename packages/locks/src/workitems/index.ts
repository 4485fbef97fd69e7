export { CosmosFeedError } from "@cosmos-feed/core/errors";
export {
  DEFAULT_WORK_ITEM_LEASE_MS,
  leaseExpired,
  type WorkItem,
  type WorkItemLease,
  WorkItemLeasedError,
  WorkItemLeaseLostError,
  WorkItemStore,
  type WorkItemStoreOptions,
} from "./store.js";
