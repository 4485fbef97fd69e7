import { appContext } from "../../src/shared/resources/index.js";
import { type InProcessTaskHub, startInProcessTaskHub } from "./durable-host.js";

/**
 * The app's own orchestrations and activities (functions/provisioning.ts) on an in-process Cosmos DB task hub over
 * the app context's containers: what the reactions trigger's durable client starts. Set the app settings (e.g.
 * ACTIVITY_FIRST_RETRY_INTERVAL_MS) before calling: the orchestrations read their knobs when they load.
 */
export async function startAppTaskHub(): Promise<InProcessTaskHub> {
  const p = await import("../../functions/provisioning.js");
  const ctx = appContext();
  return startInProcessTaskHub({
    container: ctx.containers.durable,
    leaseContainer: ctx.containers.leases,
    orchestrators: { provisioning: p.provisioningOrchestrator, deprovisioning: p.deprovisioningOrchestrator },
    activities: {
      validateResource: p.validateResource,
      provisionResource: p.provisionResource,
      finalizeResource: p.finalizeResource,
      failResource: p.failResource,
      deprovisionResource: p.deprovisionResource,
    },
  });
}
