import type { Container } from "@azure/cosmos";
import { type ChangeFeedProcessor, createChangeFeedProcessor } from "@cosmos-feed/changefeed";
import { ChangeFeedDefaults } from "@cosmos-feed/changefeed/options";
import type { DispatchFeed, DispatchHandler, DispatchOptions } from "../backend.js";
import type { AnyDoc } from "../documents.js";

/**
 * The Cosmos DB backend's dispatch feed: the change feed of the hub's container, read from its beginning by the
 * project's change feed processor with its leases (`durable.<hub>.` prefix) in the lease container, so that hosts
 * share the instances and a page is checkpointed only once its handler resolved. The feed is the backstop (a host
 * runs what it writes at once): it is read in fuller, fewer pages (`minReadInterval` = the poll delay).
 */
export class CosmosDispatchFeed implements DispatchFeed {
  private readonly processor: ChangeFeedProcessor<AnyDoc>;
  readonly leases: { prefix: string; leaseExpirationIntervalMs: number };

  constructor(
    container: Container,
    leaseContainer: Container,
    hubName: string,
    handler: DispatchHandler,
    o: DispatchOptions,
  ) {
    this.leases = {
      prefix: `durable.${hubName}.`,
      leaseExpirationIntervalMs: o.leaseExpirationIntervalMs ?? ChangeFeedDefaults.leaseExpirationInterval,
    };
    this.processor = createChangeFeedProcessor<AnyDoc>(
      {
        monitoredContainer: container,
        leaseContainer,
        leaseContainerPrefix: this.leases.prefix,
        startFromBeginning: true,
        feedPollDelay: o.pollDelayMs,
        minReadInterval: o.pollDelayMs,
        ...(o.instanceName ? { instanceName: o.instanceName } : {}),
        ...(o.leaseAcquireIntervalMs ? { leaseAcquireInterval: o.leaseAcquireIntervalMs } : {}),
        ...(o.leaseExpirationIntervalMs ? { leaseExpirationInterval: o.leaseExpirationIntervalMs } : {}),
        ...(o.leaseRenewIntervalMs ? { leaseRenewInterval: o.leaseRenewIntervalMs } : {}),
      },
      (docs, context) => handler(docs, { signal: context.signal }),
    );
    this.processor.on("error", (e: unknown) => o.error(e));
    if (o.leaseAcquired) {
      const acquired = o.leaseAcquired;
      this.processor.on("acquired", (token) => acquired(token));
    }
    this.processor.on("lost", (token, reason) => o.leaseLost(token, String(reason)));
    this.processor.on("released", (token) => o.leaseLost(token, "released"));
  }

  get instanceName(): string | undefined {
    return this.processor.instanceName;
  }

  start(): Promise<void> {
    return this.processor.start();
  }

  stop(options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    return this.processor.stop(options);
  }

  abandon(): Promise<void> {
    return this.processor.abandon();
  }

  ownedLeaseTokens(): string[] {
    return this.processor.ownedLeaseTokens();
  }
}
