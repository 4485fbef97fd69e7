import type { Container, ContainerRequest, CosmosClient, IndexingPolicy } from "@azure/cosmos";
import { createContainerIfNotExists, createDatabaseIfNotExists } from "@cosmos-feed/core/cosmos/ensure";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import rawDefinition from "./containers.json" with { type: "json" };

/** What code looks a container up by (the name the service stores may differ). */
export const CONTAINER_ROLES = [
  "resources",
  "summaries",
  "leases",
  "locks",
  // The dev host's Durable Task hub (instances, history, pending work): docs/durable-design.md.
  "durable",
] as const;
export type ContainerRole = (typeof CONTAINER_ROLES)[number];

export interface ContainerDefinition {
  role: ContainerRole;
  name: string;
  /** One path, e.g. "/subscriptionId". */
  partitionKey: string;
  /** Absent: TTL off. −1: on, no default. n ≥ 1: seconds after the last write. */
  defaultTtl?: number;
  /** Manual RU/s where the account is provisioned (400–1,000,000 in steps of 100); ignored on serverless. */
  throughput?: number;
  indexingPolicy?: IndexingPolicy;
  /** Used by the dev host alone (its durable task hub): Bicep does not provision it in Azure. */
  devHostOnly?: boolean;
}

export interface DatabaseDefinition {
  database: { name: string };
  containers: ContainerDefinition[];
}

/** containers.json (or another definition) is malformed; the message names the field. */
export class ContainerDefinitionError extends CosmosFeedError {}

const CONTAINER_KEYS = new Set([
  "role",
  "name",
  "partitionKey",
  "defaultTtl",
  "throughput",
  "indexingPolicy",
  "devHostOnly",
]);
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,254}$/;

/**
 * Validates a definition: every role exactly once, names the service accepts, one partition key path, TTLs and
 * throughput in range, and what the app relies on — leases and locks partitioned by /id with TTL on.
 */
export function parseContainerDefinition(raw: unknown): DatabaseDefinition {
  const fail = (message: string): never => {
    throw new ContainerDefinitionError(`Container definition: ${message}`);
  };
  if (typeof raw !== "object" || raw === null) fail("must be a JSON object.");
  const o = raw as Record<string, unknown>;
  const db = o.database as Record<string, unknown> | undefined;
  if (typeof db?.name !== "string" || !NAME.test(db.name)) fail("database.name must be a valid database id.");
  if (!Array.isArray(o.containers)) fail("containers must be an array.");
  const seen = new Map<string, ContainerDefinition>();
  const names = new Set<string>();
  for (const [i, c] of (o.containers as unknown[]).entries()) {
    const at = `containers[${i}]`;
    if (typeof c !== "object" || c === null) fail(`${at} must be an object.`);
    const d = c as Record<string, unknown>;
    for (const key of Object.keys(d))
      if (!CONTAINER_KEYS.has(key)) fail(`${at} has an unknown field '${key}'.`);
    if (!CONTAINER_ROLES.includes(d.role as ContainerRole)) {
      fail(`${at}.role must be one of ${CONTAINER_ROLES.join(", ")}; got ${JSON.stringify(d.role)}.`);
    }
    if (seen.has(d.role as string)) fail(`${at}: role '${String(d.role)}' is defined twice.`);
    if (typeof d.name !== "string" || !NAME.test(d.name)) fail(`${at}.name must be a valid container id.`);
    if (names.has(d.name as string)) fail(`${at}: container name '${String(d.name)}' is used twice.`);
    if (typeof d.partitionKey !== "string" || !/^\/[A-Za-z0-9_]+(\/[A-Za-z0-9_]+)*$/.test(d.partitionKey)) {
      fail(`${at}.partitionKey must be one path such as "/id"; got ${JSON.stringify(d.partitionKey)}.`);
    }
    if (
      d.defaultTtl !== undefined &&
      (!Number.isInteger(d.defaultTtl) || (d.defaultTtl !== -1 && (d.defaultTtl as number) < 1))
    ) {
      fail(`${at}.defaultTtl must be -1 or a whole number of seconds ≥ 1 (omit it for TTL off).`);
    }
    if (
      d.throughput !== undefined &&
      (!Number.isInteger(d.throughput) ||
        (d.throughput as number) < 400 ||
        (d.throughput as number) > 1_000_000 ||
        (d.throughput as number) % 100 !== 0)
    ) {
      fail(`${at}.throughput must be 400–1000000 RU/s in steps of 100.`);
    }
    if (
      d.indexingPolicy !== undefined &&
      (typeof d.indexingPolicy !== "object" || d.indexingPolicy === null)
    ) {
      fail(`${at}.indexingPolicy must be an object.`);
    }
    if (d.devHostOnly !== undefined && typeof d.devHostOnly !== "boolean") {
      fail(`${at}.devHostOnly must be true or false (omit it for a container Azure needs too).`);
    }
    const def = d as unknown as ContainerDefinition;
    if (def.devHostOnly === true && def.role !== "durable") {
      fail(
        `the ${def.role} container is the app's own: only the dev host's durable task hub may be devHostOnly.`,
      );
    }
    if ((def.role === "leases" || def.role === "locks") && def.partitionKey !== "/id") {
      fail(`the ${def.role} container must be partitioned by /id (the trigger and the lock require it).`);
    }
    if ((def.role === "leases" || def.role === "locks") && def.defaultTtl === undefined) {
      fail(`the ${def.role} container needs TTL on (defaultTtl -1 or seconds): stale locks must expire.`);
    }
    seen.set(def.role, def);
    names.add(def.name);
  }
  for (const role of CONTAINER_ROLES) if (!seen.has(role)) fail(`no container has role '${role}'.`);
  return {
    database: { name: db?.name as string },
    containers: CONTAINER_ROLES.map((r) => seen.get(r) as ContainerDefinition),
  };
}

/** The app's definition (src/shared/containers.json), validated when this module loads. */
export const containerDefinition: DatabaseDefinition = parseContainerDefinition(rawDefinition);

/** The definition of one role. */
export function containerOf(role: ContainerRole, def: DatabaseDefinition = containerDefinition) {
  return def.containers.find((c) => c.role === role) as ContainerDefinition;
}

/** The container's create request (without throughput: the caller decides, serverless accounts refuse it). */
export function containerRequestOf(c: ContainerDefinition): ContainerRequest {
  return {
    id: c.name,
    partitionKey: { paths: [c.partitionKey] },
    ...(c.defaultTtl !== undefined ? { defaultTtl: c.defaultTtl } : {}),
    ...(c.indexingPolicy ? { indexingPolicy: c.indexingPolicy } : {}),
  };
}

/**
 * For the dev host's `ContainerDefinitionLookup`: the definition of `databaseName/containerName` when it is one of
 * ours, else undefined.
 */
export function lookupContainer(
  databaseName: string,
  containerName: string,
  def: DatabaseDefinition = containerDefinition,
): ContainerDefinition | undefined {
  if (databaseName !== def.database.name) return undefined;
  return def.containers.find((c) => c.name === containerName);
}

export interface EnsureContainersOptions {
  /** Give created containers their `throughput` (default true; false for a serverless account). */
  provisionThroughput?: boolean;
  /** Told about each database or container created. */
  onCreated?: (what: string) => void;
}

/**
 * Creates the database and each container that is missing (an existing one is never changed). Only where creating
 * is allowed — the emulator and dev accounts: in Azure, Bicep creates them and the app's identity only has
 * data-plane rights. Returns the containers by role.
 */
export async function ensureContainers(
  client: CosmosClient,
  options: EnsureContainersOptions = {},
  def: DatabaseDefinition = containerDefinition,
): Promise<Record<ContainerRole, Container>> {
  const { database, statusCode } = await createDatabaseIfNotExists(client, { id: def.database.name });
  if (statusCode === 201) options.onCreated?.(`database '${def.database.name}'`);
  const out = {} as Record<ContainerRole, Container>;
  for (const c of def.containers) {
    const res = await createContainerIfNotExists(database, {
      ...containerRequestOf(c),
      ...(options.provisionThroughput !== false && c.throughput ? { throughput: c.throughput } : {}),
    });
    if (res.statusCode === 201) options.onCreated?.(`container '${def.database.name}/${c.name}'`);
    out[c.role] = res.container;
  }
  return out;
}

/**
 * For the dev host's container lookup: the create request (without id) of `databaseName/containerName` when it is
 * one of ours, so a container it creates on the emulator has our partition key, TTL and indexing.
 */
export function containerRequestFor(
  databaseName: string,
  containerName: string,
  def: DatabaseDefinition = containerDefinition,
): Omit<ContainerRequest, "id"> | undefined {
  const c = lookupContainer(databaseName, containerName, def);
  if (!c) return undefined;
  const { id: _id, ...request } = containerRequestOf(c);
  return request;
}
