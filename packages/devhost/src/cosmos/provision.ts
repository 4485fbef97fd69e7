import type { Container, ContainerRequest, CosmosClient } from "@azure/cosmos";
import { createContainerIfNotExists, createDatabaseIfNotExists } from "@cosmos-feed/core/cosmos/ensure";
import { statusOf } from "@cosmos-feed/core/cosmos/errors";

/** What the dev host's Cosmos units log through: the host's levels (a subset of the worker's). */
export type BindingLog = (
  level: "debug" | "information" | "warning" | "error",
  message: string,
  extras?: { invocationId?: string },
) => void;

/**
 * Definition of a container the dev host creates when it is missing (partition key, TTL, …): the caller's
 * lookup, e.g. over src/shared/containers.json. Undefined → partition key `/id`.
 */
export type ContainerDefinitionLookup = (
  databaseName: string,
  containerName: string,
) => Omit<ContainerRequest, "id"> | undefined;

export interface EnsureContainerOptions {
  client: CosmosClient;
  databaseName: string;
  containerName: string;
  /** Used only when the container is created. */
  definition: Omit<ContainerRequest, "id">;
  /** RU/s of a created container (none: the definition's, else the database's or the account's default). */
  throughput?: number;
  log: BindingLog;
  /** Why it is created, for the log line ("lease container of function 'x'"). */
  role: string;
  /** Where the definition came from and how to choose another, for the log line (cosmos/containerChoice.ts). */
  choice?: { source: string; advice?: string };
  /** Called once the container was created (not when it existed), e.g. to log what the choice means. */
  onCreated?: () => void;
}

/**
 * As CosmosDBUtility.CreateDatabaseAndCollectionIfNotExistAsync: create the database if missing, read the
 * container, create it only on 404 (so an existing container's settings are never touched). Returns the container.
 */
export async function ensureContainer(o: EnsureContainerOptions): Promise<Container> {
  const { database, statusCode: dbStatus } = await createDatabaseIfNotExists(o.client, {
    id: o.databaseName,
  });
  if (dbStatus === 201) o.log("information", `Created database '${o.databaseName}' (${o.role}).`);
  const container = database.container(o.containerName);
  try {
    await container.read();
    return container;
  } catch (e) {
    if (statusOf(e) !== 404) throw e;
  }
  // The trigger's own throughput option wins over the definition's (the extension creates with its option).
  const throughput = o.throughput !== undefined && o.throughput > 0 ? o.throughput : o.definition.throughput;
  const { statusCode } = await createContainerIfNotExists(database, {
    ...o.definition,
    id: o.containerName,
    ...(throughput ? { throughput } : {}),
  });
  if (statusCode === 201) {
    const pk = o.definition.partitionKey;
    const paths = typeof pk === "string" ? [pk] : Array.isArray(pk) ? pk : (pk?.paths ?? []);
    const from = o.choice ? `, from ${o.choice.source}` : "";
    const advice = o.choice?.advice ? `; ${o.choice.advice}` : "";
    o.log(
      "information",
      `Created container '${o.databaseName}/${o.containerName}' (${o.role}; partition key ${paths.join(", ") || "/id"}${from}${o.definition.defaultTtl !== undefined ? `, defaultTtl ${o.definition.defaultTtl}` : ""}${throughput ? `, ${throughput} RU/s` : ""}${advice}).`,
    );
    o.onCreated?.();
  }
  return container;
}

/** True when the container exists (a 404 on read → false; other errors propagate). */
export async function containerExists(container: Container): Promise<boolean> {
  try {
    await container.read();
    return true;
  } catch (e) {
    if (statusOf(e) === 404) return false;
    throw e;
  }
}
