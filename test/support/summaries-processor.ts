import { type ChangeFeedProcessor, createChangeFeedProcessor } from "../../packages/changefeed/src/index.js";
import { type AppContext, RESOURCE_TRIGGERS } from "../../src/shared/resources/index.js";

/**
 * A real change feed processor on the summaries trigger's lease prefix over the app's containers, as the dev host
 * runs the trigger, with short test intervals: one host ("host-a"), from the beginning, no hand-off on stop.
 */
export function summariesProcessor(
  ctx: AppContext,
  handler: (docs: unknown[]) => Promise<void>,
): ChangeFeedProcessor<unknown> {
  return createChangeFeedProcessor<unknown>(
    {
      monitoredContainer: ctx.containers.resources,
      leaseContainer: ctx.containers.leases,
      leaseContainerPrefix: RESOURCE_TRIGGERS.summaries.leaseContainerPrefix,
      instanceName: "host-a",
      startFromBeginning: true,
      feedPollDelay: 50,
      leaseRenewInterval: 200,
      leaseAcquireInterval: 300,
      leaseExpirationInterval: 1_500,
      handoffTimeout: 0,
    },
    handler,
  );
}
