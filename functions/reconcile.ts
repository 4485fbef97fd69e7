import { app, type InvocationContext, type Timer } from "@azure/functions";
import * as df from "durable-functions";
import { openAppContext, reconcileOperations } from "../src/shared/resources/index.js";
import { loadSettings } from "../src/shared/settings.js";

// The safety net under "every acknowledged operation ends" (docs/app.md): operations that stopped moving are started
// again or ended, whatever the trigger or an orchestration missed.
const settings = loadSettings();

export async function reconcileStalledOperations(_timer: Timer, context: InvocationContext): Promise<void> {
  const out = await reconcileOperations(await openAppContext(), df.getClient(context), {
    now: Date.now(),
    stallMs: settings.operationStallSeconds * 1000,
  });
  if (out.stalled === 0) return;
  const line = `Stalled operations: ${out.stalled}; orchestrations started: ${out.started.length}, failed for an ended orchestration: ${out.failed.length}, ended (superseded or resource gone): ${out.ended.length}, still running: ${out.running.length}.`;
  if (out.started.length + out.failed.length + out.ended.length > 0) context.warn(line);
  else context.log(line);
}

app.timer("reconcileOperations", {
  schedule: settings.operationReconcileSchedule,
  extraInputs: [df.input.durableClient()],
  handler: reconcileStalledOperations,
});
