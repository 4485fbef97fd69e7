import { existsSync, readFileSync } from "node:fs";
import type { ContainerRequest, CosmosClient } from "@azure/cosmos";
import { createContainerIfNotExists, createDatabaseIfNotExists } from "@cosmos-feed/core/cosmos/ensure";
import type { ContainerDefinitionLookup } from "./cosmos/provision.js";
import { DevHostError } from "./errors.js";
import type { ThroughputChoice } from "./throughputMode.js";

/**
 * The role of the dev host's own durable task hub container, created on the emulator WITHOUT its defined
 * throughput: on Azure the Functions host keeps Durable Functions in its own storage provider (Azure Storage or
 * the Durable Task Scheduler), so the hub's polling, claims and history writes are a cost of this stand-in that the
 * app never pays there. Without throughput the emulator gives it the service's default offer (400 RU/s), readable
 * and replaceable but not enforced (docs/emulator.md, Offers): the hub is never throttled by a figure meant for
 * Azure.
 */
export const UNTHROTTLED_ROLE = "durable";

/** A container definition file, read once: the database and each container's create request (without id). */
export interface ContainerDefinitions {
  file: string;
  database: string | undefined;
  requests: Map<string, Omit<ContainerRequest, "id">>;
  /** For the Cosmos DB trigger: the request of `databaseName/containerName` when the file defines it. */
  lookup: ContainerDefinitionLookup;
  /** Container names by role (`durable`, `leases` …), for the containers the dev host itself uses. */
  roles: Map<string, string>;
  /** The throughput mode the requests follow (`cosmos-feed start`'s COSMOS_THROUGHPUT_MODE). */
  throughputMode: ThroughputChoice["mode"];
}

/** Manual RU/s as containers.json allows them (src/shared/containers.ts checks the same): 400–1,000,000 by 100. */
function isThroughput(n: unknown): n is number {
  return typeof n === "number" && Number.isInteger(n) && n >= 400 && n <= 1_000_000 && n % 100 === 0;
}

/**
 * Reads a container definition file in this project's format (src/shared/containers.json: `database.name` and
 * `containers[]` with `name`, `partitionKey`, `defaultTtl`, `throughput`, `indexingPolicy`), so that containers
 * created on the emulator get the app's partition key, TTL and throughput, not `/id` and an unenforced default.
 * The throughput follows `throughput.mode` as Bicep provisions it (default manual): manual, the file's RU/s (enforced
 * with 429s as on an Azure account provisioned with it); autoscale, `autoscaleMax` for every container; serverless,
 * none (the serverless emulator's own per-partition limit applies). The durable task hub's container
 * ({@link UNTHROTTLED_ROLE}) is created without throughput. Undefined when the file does not exist.
 */
export function readContainerDefinitions(
  file: string,
  throughput: ThroughputChoice = { mode: "manual", from: "", autoscaleMax: 0 },
): ContainerDefinitions | undefined {
  if (!existsSync(file)) return undefined;
  let parsed: {
    database?: { name?: string };
    containers?: {
      role?: string;
      name?: string;
      partitionKey?: string;
      defaultTtl?: number;
      throughput?: unknown;
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
    if (c.throughput !== undefined && !isThroughput(c.throughput)) {
      throw new DevHostError(
        `Container definitions (${file}): container '${c.name}' has throughput ${JSON.stringify(c.throughput)}; it must be manual RU/s from 400 to 1000000 in steps of 100.`,
        { code: "AppLoad" },
      );
    }
    if (c.throughput !== undefined && c.role !== UNTHROTTLED_ROLE) {
      // As infra/bicep/modules/cosmos.bicep provisions each mode: serverless none, autoscale its maximum.
      if (throughput.mode === "manual") request.throughput = c.throughput;
      else if (throughput.mode === "autoscale") request.maxThroughput = throughput.autoscaleMax;
    }
    requests.set(c.name, request);
  }
  const lookup: ContainerDefinitionLookup = (databaseName, containerName) =>
    database === databaseName ? requests.get(containerName) : undefined;
  return { file, database, requests, lookup, roles, throughputMode: throughput.mode };
}

/** The lookup of a definition file (see {@link readContainerDefinitions}); undefined when the file does not exist. */
export function loadContainerDefinitions(file: string): ContainerDefinitionLookup | undefined {
  return readContainerDefinitions(file)?.lookup;
}

/**
 * Creates, on the embedded emulator only, the database and every defined container that is missing (one log line
 * each, with its RU/s): the app may use containers no trigger or binding names (locks, operations), and on Azure
 * Bicep provisions them from the same file. An existing container is left as it is. Returns the names created.
 */
export async function createDefinedContainers(
  definitions: ContainerDefinitions,
  client: CosmosClient,
  log: (message: string) => void,
): Promise<string[]> {
  const { file, database: databaseName, requests, throughputMode } = definitions;
  if (!databaseName) return [];
  const { database, statusCode } = await createDatabaseIfNotExists(client, { id: databaseName });
  const created: string[] = [];
  if (statusCode === 201) log(`Created database '${databaseName}' (from ${file}).`);
  for (const [name, request] of requests) {
    const res = await createContainerIfNotExists(database, { id: name, ...request });
    if (res.statusCode === 201) {
      created.push(name);
      const ru = request.throughput
        ? `${request.throughput} RU/s`
        : request.maxThroughput
          ? `autoscale up to ${request.maxThroughput} RU/s`
          : throughputMode === "serverless"
            ? "serverless"
            : "throughput not enforced";
      log(`Created container '${databaseName}/${name}' (from ${file}; ${ru}).`);
    }
  }
  return created;
}
