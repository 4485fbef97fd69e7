import { app, type InvocationContext } from "@azure/functions";
import * as df from "durable-functions";
import { containerDefinition, containerOf } from "../src/shared/containers.js";
import {
  openAppContext,
  RESOURCE_TRIGGERS,
  startOrchestrations,
  summarizePage,
} from "../src/shared/resources/index.js";
import { loadSettings } from "../src/shared/settings.js";

// Two Cosmos DB triggers on the resources container, one lease container, a prefix each.
const settings = loadSettings();

// The trigger options every knob flows into (numbers: `%SETTING%` resolves only in the extension's strings).
const feedOptions = {
  connection: settings.cosmosConnectionSetting,
  databaseName: containerDefinition.database.name,
  containerName: containerOf("resources").name,
  leaseContainerName: containerOf("leases").name,
  // In Azure the app's identity cannot create containers (Bicep does); the dev host creates them on the emulator.
  createLeaseContainerIfNotExists: false,
  startFromBeginning: true,
  feedPollDelay: settings.feedPollDelayMs,
  leaseAcquireInterval: settings.leaseAcquireIntervalMs,
  leaseExpirationInterval: settings.leaseExpirationIntervalMs,
  leaseRenewInterval: settings.leaseRenewIntervalMs,
  maxItemsPerInvocation: settings.maxItemsPerInvocation,
  // The host retries a failed invocation; without it the extension checkpoints past a failed batch.
  retry: {
    strategy: "exponentialBackoff",
    maxRetryCount: settings.triggerMaxRetryCount,
    minimumInterval: settings.triggerRetryMinIntervalMs,
    maximumInterval: settings.triggerRetryMaxIntervalMs,
  },
} as const;

/**
 * For each resource in a state it reacts to: starts its (de)provisioning orchestration with the operation's
 * deterministic instance id unless that instance exists (so a redelivered change never starts it twice), its input
 * carrying the sighting that validate records on the operation. No Cosmos DB request.
 */
export async function reactToResources(documents: unknown[], context: InvocationContext): Promise<void> {
  const outcome = await startOrchestrations(df.getClient(context), documents);
  context.log(
    `Saw ${documents.length} change(s): ${outcome.skipped} skipped; orchestrations started: ${outcome.started.length}, already existing: ${outcome.existing.length}.`,
  );
}

/**
 * Keeps each touched subscription's counts by provisioning state (recounted, so redelivery is harmless), then waits
 * out the rest of SUMMARY_RECOUNT_WINDOW_MS unless the page was full: one recount per subscription per window
 * (src/shared/resources/summary-window.ts).
 */
export async function summarizeResources(documents: unknown[], context: InvocationContext): Promise<void> {
  const { changed, waitedMs } = await summarizePage(await openAppContext(), documents, {
    windowMs: settings.summaryRecountWindowMs,
    maxItems: settings.summaryMaxItemsPerInvocation,
  });
  if (changed.length > 0) context.log(`Updated the summary of ${changed.join(", ")}.`);
  if (waitedMs > 0) context.log(`Waited ${waitedMs} ms before the next page (SUMMARY_RECOUNT_WINDOW_MS).`);
}

app.cosmosDB(RESOURCE_TRIGGERS.reactions.functionName, {
  ...feedOptions,
  leaseContainerPrefix: RESOURCE_TRIGGERS.reactions.leaseContainerPrefix,
  extraInputs: [df.input.durableClient()],
  handler: reactToResources,
});

app.cosmosDB(RESOURCE_TRIGGERS.summaries.functionName, {
  ...feedOptions,
  // Summaries may lag (SUMMARY_POLL_DELAY_MS on a quiet feed, SUMMARY_RECOUNT_WINDOW_MS on a busy one): fewer
  // polls, and one recount for many changes; pages large enough that a window's changes fit in one.
  feedPollDelay: settings.summaryPollDelayMs,
  maxItemsPerInvocation: settings.summaryMaxItemsPerInvocation,
  leaseContainerPrefix: RESOURCE_TRIGGERS.summaries.leaseContainerPrefix,
  handler: summarizeResources,
});
