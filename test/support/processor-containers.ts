import type { Container, Database } from "@azure/cosmos";
import { uniqueName } from "./emulator.js";

/** Short processor intervals (ms) so balancing rounds, renewals and expiry happen within a test. */
export const FAST_INTERVALS = {
  leaseRenewInterval: 200,
  leaseAcquireInterval: 300,
  leaseExpirationInterval: 1_500,
  feedPollDelay: 50,
};

/**
 * A monitored container (`/pk`, V2 hash) with `ranges` physical ranges (6,000 RU/s each, the emulator's rule for
 * manual throughput) and a lease container as the processor needs it (`/id`, TTL on).
 */
export async function processorContainers(
  db: Database,
  ranges: number,
): Promise<{ monitored: Container; leases: Container }> {
  const { container: monitored } = await db.containers.create(
    { id: uniqueName("data"), partitionKey: { paths: ["/pk"], version: 2 } },
    { offerThroughput: ranges * 6_000 },
  );
  const { container: leases } = await db.containers.create({
    id: uniqueName("leases"),
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  return { monitored, leases };
}
