import { existsSync, readFileSync } from "node:fs";
import type { ContainerRequest, CosmosClient } from "@azure/cosmos";
import { createContainerIfNotExists, createDatabaseIfNotExists } from "../shared/cosmos/ensure.js";
import type { ContainerDefinitionLookup } from "./cosmos/provision.js";
import { DevHostError } from "./errors.js";

/** A container definition file, read once: the database and each container's create request (without id). */
export interface ContainerDefinitions {
  file: string;
  database: string | undefined;
  requests: Map<string, Omit<ContainerRequest, "id">>;
  /** For the Cosmos DB trigger: the request of `databaseName/containerName` when the file defines it. */
  lookup: ContainerDefinitionLookup;
  /** Container names by role (`durable`, `leases` …), for the containers the dev host itself uses. */
  roles: Map<string, string>;
}

/**
 * Reads a container definition file in this project's format (src/shared/containers.json: `database.name` and
 * `containers[]` with `name`, `partitionKey`, `defaultTtl`, `indexingPolicy`), so that containers created on the
 * emulator get the app's partition key and TTL, not `/id`. Undefined when the file does not exist.
 */
export function readContainerDefinitions(file: string): ContainerDefinitions | undefined {
  if (!existsSync(file)) return undefined;
  let parsed: {
    database?: { name?: string };
    containers?: {
      role?: string;
      name?: string;
      partitionKey?: string;
      defaultTtl?: number;
      indexingPolicy?: unknown;
    }[];
  };
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new DevHostError(`Container definitions (${file}) are not valid JSON: ${(e as Error).message}`, {
      code: "AppLoad",
    });
  }
  const database = parsed.database?.name;
  const requests = new Map<string, Omit<ContainerRequest, "id">>();
  const roles = new Map<string, string>();
  for (const c of parsed.containers ?? []) {
    if (!c.name || !c.partitionKey) continue;
    if (typeof c.role === "string") roles.set(c.role, c.name);
    const request: Omit<ContainerRequest, "id"> = { partitionKey: { paths: [c.partitionKey] } };
    if (typeof c.defaultTtl === "number") request.defaultTtl = c.defaultTtl;
    if (c.indexingPolicy) request.indexingPolicy = c.indexingPolicy as ContainerRequest["indexingPolicy"];
    requests.set(c.name, request);
  }
  const lookup: ContainerDefinitionLookup = (databaseName, containerName) =>
    database === databaseName ? requests.get(containerName) : undefined;
  return { file, database, requests, lookup, roles };
}

/** The lookup of a definition file (see {@link readContainerDefinitions}); undefined when the file does not exist. */
export function loadContainerDefinitions(file: string): ContainerDefinitionLookup | undefined {
  return readContainerDefinitions(file)?.lookup;
}

/**
 * Creates, on the embedded emulator only, the database and every defined container that is missing (one log line
 * each): the app may use containers no trigger or binding names (locks, operations), and on Azure Bicep provisions
 * them from the same file. Returns the names created.
 */
export async function createDefinedContainers(
  definitions: ContainerDefinitions,
  client: CosmosClient,
  log: (message: string) => void,
): Promise<string[]> {
  const { file, database: databaseName, requests } = definitions;
  if (!databaseName) return [];
  const { database, statusCode } = await createDatabaseIfNotExists(client, { id: databaseName });
  const created: string[] = [];
  if (statusCode === 201) log(`Created database '${databaseName}' (from ${file}).`);
  for (const [name, request] of requests) {
    const res = await createContainerIfNotExists(database, { id: name, ...request });
    if (res.statusCode === 201) {
      created.push(name);
      log(`Created container '${databaseName}/${name}' (from ${file}).`);
    }
  }
  return created;
}
