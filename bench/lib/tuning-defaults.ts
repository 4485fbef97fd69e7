import { ChangeFeedDefaults } from "@cosmos-feed/changefeed";
import type { TuningInput } from "@cosmos-feed/changefeed/tuning";

/**
 * A `cosmos-feed tune` input with Microsoft's defaults (the Functions trigger's and .NET's, as ChangeFeedDefaults
 * has them): renew 17 s, acquire 13 s, expiration 60 s, poll 5 s, this processor's watch and checkpoint delay 1 s;
 * idle unless `extra` says otherwise.
 */
export const tuningDefaults = (
  hosts: number,
  leases: number,
  extra: Partial<TuningInput> = {},
): TuningInput => ({
  hosts,
  leases,
  writesPerSecond: 0,
  leaseRenewIntervalMs: ChangeFeedDefaults.leaseRenewInterval,
  leaseAcquireIntervalMs: ChangeFeedDefaults.leaseAcquireInterval,
  leaseExpirationIntervalMs: ChangeFeedDefaults.leaseExpirationInterval,
  feedPollDelayMs: ChangeFeedDefaults.feedPollDelay,
  leaseWatchIntervalMs: ChangeFeedDefaults.leaseWatchInterval,
  maxCheckpointDelayMs: ChangeFeedDefaults.maxCheckpointDelay,
  ...extra,
});
