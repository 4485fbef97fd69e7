import { existsSync, readFileSync } from "node:fs";
import type { ContainerRequest } from "@azure/cosmos";
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
