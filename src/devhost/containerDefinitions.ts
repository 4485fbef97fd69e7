import { existsSync, readFileSync } from "node:fs";
import type { ContainerRequest, CosmosClient } from "@azure/cosmos";
import type { ContainerDefinitionLookup } from "./cosmos/provision.js";
import { DevHostError } from "./errors.js";

/**
 * Reads a container definition file in this project's format (src/shared/containers.json: `database.name` and
 * `containers[]` with `name`, `partitionKey`, `defaultTtl`, `indexingPolicy`) into the lookup the Cosmos DB trigger
 * uses when it creates a missing monitored container on the emulator — so it gets the app's partition key and
 * TTL, not `/id`. Undefined when the file does not exist.
 */
export function loadContainerDefinitions(file: string): ContainerDefinitionLookup | undefined {
  if (!existsSync(file)) return undefined;
  let parsed: {
    database?: { name?: string };
    containers?: { name?: string; partitionKey?: string; defaultTtl?: number; indexingPolicy?: unknown }[];
  };
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new DevHostError(`Container definitions (${file}) are not valid JSON: ${(e as Error).message}`, {
      code: "AppLoad",
    });
  }
  const database = parsed.database?.name;
  const byName = new Map((parsed.containers ?? []).filter((c) => c.name).map((c) => [c.name as string, c]));
  return (databaseName, containerName) => {
    const c = database === databaseName ? byName.get(containerName) : undefined;
    if (!c?.partitionKey) return undefined;
    const definition: Omit<ContainerRequest, "id"> = { partitionKey: { paths: [c.partitionKey] } };
    if (typeof c.defaultTtl === "number") definition.defaultTtl = c.defaultTtl;
    if (c.indexingPolicy) definition.indexingPolicy = c.indexingPolicy as ContainerRequest["indexingPolicy"];
    return definition;
  };
}

/**
 * Creates, on the embedded emulator only, the database and every container a definition file names that is missing
 * (one log line each): the app may use containers no trigger or binding names (locks, operations), and on Azure
 * Bicep provisions them from the same file. Returns the names created.
 */
export async function createDefinedContainers(
  file: string,
  client: CosmosClient,
  log: (message: string) => void,
): Promise<string[]> {
  if (!existsSync(file)) return [];
  const parsed = JSON.parse(readFileSync(file, "utf8")) as {
    database?: { name?: string };
    containers?: { name?: string }[];
  };
  const databaseName = parsed.database?.name;
  if (!databaseName) return [];
  const lookup = loadContainerDefinitions(file);
  const { database, statusCode } = await client.databases.createIfNotExists({ id: databaseName });
  const created: string[] = [];
  if (statusCode === 201) log(`Created database '${databaseName}' (from ${file}).`);
  for (const c of parsed.containers ?? []) {
    const definition = c.name ? lookup?.(databaseName, c.name) : undefined;
    if (!c.name || !definition) continue;
    const res = await database.containers.createIfNotExists({ id: c.name, ...definition });
    if (res.statusCode === 201) {
      created.push(c.name);
      log(`Created container '${databaseName}/${c.name}' (from ${file}).`);
    }
  }
  return created;
}
