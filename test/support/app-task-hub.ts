import { ensureContainers } from "../../src/shared/containers.js";
import { appContext } from "../../src/shared/resources/index.js";
import { type InProcessTaskHub, startInProcessTaskHub } from "./durable-host.js";
import { startTestEmulator, type TestEmulator } from "./emulator.js";

export interface AppOnEmulator {
  emulator: TestEmulator;
  /** The app's orchestrations on an in-process task hub: what the app's durable client inputs start. */
  durable: InProcessTaskHub;
  close(): Promise<void>;
}

/**
 * The app's process-wide context pointed at a fresh emulator (COSMOS_CONNECTION, its containers made) and the app's
 * own orchestrations and activities (functions/provisioning.ts) on an in-process Cosmos DB task hub over its
 * containers, with activity retries 50 ms apart (set before the orchestrations load: they read their knobs then).
 */
export async function startAppOnEmulator(): Promise<AppOnEmulator> {
  const emulator = await startTestEmulator();
  process.env.COSMOS_CONNECTION = emulator.emulator.connectionString;
  process.env.ACTIVITY_FIRST_RETRY_INTERVAL_MS = "50";
  await ensureContainers(emulator.client);
  const p = await import("../../functions/provisioning.js");
  const ctx = appContext();
  const durable = await startInProcessTaskHub({
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
  return {
    emulator,
    durable,
    close: async () => {
      await durable.stop();
      delete process.env.COSMOS_CONNECTION;
      delete process.env.ACTIVITY_FIRST_RETRY_INTERVAL_MS;
      await emulator.close();
    },
  };
}
