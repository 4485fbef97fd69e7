import type { Container, CosmosClient, Database } from "@azure/cosmos";
import { createCosmosClient } from "@cosmos-feed/core/cosmos/client";
import { LockClient } from "@cosmos-feed/locks";
import {
  type ContainerRole,
  containerDefinition,
  type DatabaseDefinition,
  ensureContainers,
} from "../containers.js";
import { loadSettings, type Settings } from "../settings.js";
import { SummaryVersions } from "./summaries.js";

/** What the app's handlers share: settings, the Cosmos client, the containers by role, the subscription locks. */
export interface AppContext {
  settings: Settings;
  client: CosmosClient;
  database: Database;
  containers: Record<ContainerRole, Container>;
  locks: LockClient;
  /** The summaries this process last wrote, so the next write needs no read first (summaries.ts). */
  summaryVersions: SummaryVersions;
}

/** Builds the context over an existing client (tests, the dev host). */
export function createAppContext(
  client: CosmosClient,
  settings: Settings,
  def: DatabaseDefinition = containerDefinition,
): AppContext {
  const database = client.database(def.database.name);
  const containers = Object.fromEntries(
    def.containers.map((c) => [c.role, database.container(c.name)]),
  ) as Record<ContainerRole, Container>;
  const locks = new LockClient({ container: containers.locks, ttlSeconds: settings.lockTtlSeconds });
  return { settings, client, database, containers, locks, summaryVersions: new SummaryVersions() };
}

let shared: AppContext | undefined;

/**
 * The process-wide context, built on first use from process.env (the settings and the connection named by
 * COSMOS_CONNECTION_SETTING). Lazy, so loading the app never needs Cosmos; a bad setting fails the first request
 * with the setting named (and the functions' own loadSettings() fails the load already).
 */
export function appContext(): AppContext {
  if (!shared) {
    const settings = loadSettings();
    shared = createAppContext(createCosmosClient(settings.cosmosConnectionSetting), settings);
  }
  return shared;
}

let ready: Promise<AppContext> | undefined;

/**
 * The process-wide context, after creating missing containers when COSMOS_ENSURE_CONTAINERS is true (once per
 * process; a failure is retried by the next call). What the functions call.
 */
export function openAppContext(): Promise<AppContext> {
  ready ??= (async () => {
    const ctx = appContext();
    if (ctx.settings.ensureContainers) await ensureContainers(ctx.client);
    return ctx;
  })().catch((e: unknown) => {
    ready = undefined;
    throw e;
  });
  return ready;
}
