import { badRequest, serviceMessage } from "../errors.js";
import { validateId } from "./ids.js";
import type { JsonObject, PartitionKeyDefinition } from "./types.js";

/**
 * Container definitions as the service takes them: ids, defaultTtl, partition key definitions and indexing policies,
 * validated and filled with the service's defaults.
 */

/** Largest `defaultTtl` (seconds): a 32-bit signed integer (concepts-limits, "Maximum TTL value"). */
export const MAX_TTL_SECONDS = 2_147_483_647;

export function validateResourceId(id: unknown, what: string): void {
  if (typeof id !== "string" || id.length === 0)
    throw badRequest(`The ${what} id must be a non-empty string.`);
  validateId(id, what);
}

export function validateDefaultTtl(ttl: unknown): void {
  if (ttl === undefined) return;
  if (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl === 0 || ttl < -1 || ttl > MAX_TTL_SECONDS) {
    throw badRequest(
      `The defaultTtl must be -1 (on, no default expiry) or a whole number of seconds from 1 to ${MAX_TTL_SECONDS}; got ${JSON.stringify(ttl)}.`,
    );
  }
}

/**
 * Where a partition key path stops being valid (the service's "failed near position"), or undefined when it is valid:
 * it must start with '/', have no empty segment, no trailing slash and no wildcard.
 */
function invalidPathPosition(p: unknown): number | undefined {
  if (typeof p !== "string" || !p.startsWith("/")) return 0;
  for (let i = 1; i < p.length; i++) {
    if (p[i] === "*" || p[i] === "?") return i;
    if (p[i] === "/" && (p[i - 1] === "/" || i === p.length - 1)) return i;
  }
  return p.length === 1 ? 1 : undefined;
}

/** Fills the service's defaults into a partition key definition and validates it. */
export function normalizePartitionKey(input: unknown): PartitionKeyDefinition {
  // A container created without a partition key (x-ms-version 2018-08-31 and older) gets the service's system key,
  // marked as one: the .NET change feed processor refuses a lease container whose `/_partitionKey` is not.
  if (input === undefined || input === null)
    return { paths: ["/_partitionKey"], kind: "Hash", version: 1, systemKey: true };
  if (typeof input !== "object")
    throw badRequest("The partitionKey must be {paths: ['/path'], kind?, version?}.");
  const def = input as { paths?: unknown; kind?: unknown; version?: unknown; systemKey?: unknown };
  if (!Array.isArray(def.paths) || def.paths.length === 0) {
    throw badRequest("The partitionKey needs at least one path, e.g. {paths: ['/tenantId']}.");
  }
  if (def.paths.length > 3) throw badRequest("A hierarchical partition key can have at most 3 paths.");
  for (const p of def.paths) {
    const at = invalidPathPosition(p);
    if (at !== undefined) {
      throw badRequest(
        serviceMessage(
          `The partition key component definition path '${String(p)}' could not be accepted, failed near position '${at}'. Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character.`,
        ),
      );
    }
  }
  const kind = def.kind ?? (def.paths.length > 1 ? "MultiHash" : "Hash");
  if (kind !== "Hash" && kind !== "MultiHash")
    throw badRequest(`Partition key kind '${String(kind)}' is not supported.`);
  if (kind === "Hash" && def.paths.length > 1)
    throw badRequest("Several partition key paths need kind 'MultiHash'.");
  const version = def.version ?? (kind === "MultiHash" ? 2 : 1);
  if (version !== 1 && version !== 2)
    throw badRequest(`Partition key version ${String(version)} is not supported.`);
  if (kind === "MultiHash" && version !== 2) throw badRequest("A MultiHash partition key needs version 2.");
  const out: PartitionKeyDefinition = { paths: def.paths as string[], kind, version };
  if (def.systemKey === true) out.systemKey = true;
  return out;
}

/** The path the service excludes from indexing unless a policy names `_etag` itself. */
const ETAG_PATH = '/"_etag"/?';

/**
 * Fills the service's defaults into an indexing policy and validates it (learn.microsoft.com/azure/cosmos-db/
 * index-policy): mode `consistent` (or `none`; new containers cannot choose `lazy`), `automatic: true`,
 * included `/*` when no paths are given; the root path `/*` must be included or excluded (the first API's root
 * `/` or `/?` counts as, and is stored as, `/*`); `_etag` is
 * excluded unless the policy names it; composite indexes have two or more paths whose `order` is `ascending`
 * (the default) or `descending`. Anything else comes back as given.
 */
export function normalizeIndexingPolicy(input: unknown): JsonObject {
  if (input === undefined || input === null) {
    return {
      indexingMode: "consistent",
      automatic: true,
      includedPaths: [{ path: "/*" }],
      excludedPaths: [{ path: ETAG_PATH }],
    };
  }
  if (typeof input !== "object" || Array.isArray(input))
    throw badRequest("The indexingPolicy must be a JSON object.");
  const policy: JsonObject = { ...(input as JsonObject) };
  const mode = policy.indexingMode ?? "consistent";
  const modeName = typeof mode === "string" ? mode.toLowerCase() : "";
  if (modeName === "lazy")
    throw badRequest("New containers cannot use the lazy indexing mode; use consistent or none.");
  if (modeName !== "consistent" && modeName !== "none") {
    throw badRequest(`The indexingMode must be 'consistent' or 'none'; got ${JSON.stringify(mode)}.`);
  }
  policy.indexingMode = modeName;
  if (policy.automatic === undefined) policy.automatic = true;
  else if (typeof policy.automatic !== "boolean")
    throw badRequest("The indexingPolicy's automatic must be true or false.");
  const noPaths = policy.includedPaths === undefined && policy.excludedPaths === undefined;
  const included = indexPaths(policy.includedPaths, "includedPaths");
  const excluded = indexPaths(policy.excludedPaths, "excludedPaths");
  if (modeName === "consistent") {
    if (noPaths) included.push({ path: "/*" });
    if (![...included, ...excluded].some((p) => p.path === "/*")) {
      throw badRequest(
        'The special mandatory indexing path "/*" is not provided in any of the path type sets (includedPaths or excludedPaths).',
      );
    }
    if (![...included, ...excluded].some((p) => String(p.path).includes("_etag")))
      excluded.push({ path: ETAG_PATH });
  }
  policy.includedPaths = included;
  policy.excludedPaths = excluded;
  if (policy.compositeIndexes !== undefined)
    policy.compositeIndexes = compositeIndexes(policy.compositeIndexes);
  return policy;
}

const LEGACY_ROOT_PATHS = new Set(["/", "/?"]);

function indexPaths(value: unknown, name: string): JsonObject[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw badRequest(`The indexingPolicy's ${name} must be an array of {path}.`);
  return value.map((entry) => {
    if (entry === null || typeof entry !== "object" || Array.isArray(entry))
      throw badRequest(`Every entry of ${name} must be an object like {"path": "/name/?"}.`);
    const path = (entry as JsonObject).path;
    if (typeof path !== "string" || !path.startsWith("/"))
      throw badRequest(`The ${name} path ${JSON.stringify(path)} is invalid; it must start with '/'.`);
    // The first API's root path: "/" (and its scalar form "/?") meant the whole document; the service still accepts
    // it and answers with the root wildcard it stands for.
    if (LEGACY_ROOT_PATHS.has(path)) return { ...(entry as JsonObject), path: "/*" };
    return { ...(entry as JsonObject) };
  });
}

function compositeIndexes(value: unknown): JsonObject[][] {
  if (!Array.isArray(value))
    throw badRequest("compositeIndexes must be an array of arrays of {path, order}.");
  return value.map((index) => {
    if (!Array.isArray(index) || index.length < 2)
      throw badRequest(
        "Every composite index must list two or more paths, e.g. [{path: '/a'}, {path: '/b'}].",
      );
    return index.map((entry) => {
      if (entry === null || typeof entry !== "object" || Array.isArray(entry))
        throw badRequest(
          'Every composite index path must be an object like {"path": "/name", "order": "ascending"}.',
        );
      const { path, order } = entry as JsonObject;
      if (typeof path !== "string" || !path.startsWith("/") || path.endsWith("*"))
        throw badRequest(
          `The composite index path ${JSON.stringify(path)} is invalid; it must start with '/' and cannot use the '*' wildcard.`,
        );
      const orderName =
        order === undefined ? "ascending" : typeof order === "string" ? order.toLowerCase() : "";
      if (orderName !== "ascending" && orderName !== "descending") {
        throw badRequest(
          `The composite index order for ${path} must be 'ascending' or 'descending'; got ${JSON.stringify(order)}.`,
        );
      }
      return { ...(entry as JsonObject), order: orderName };
    });
  });
}

/**
 * The container's `geospatialConfig` against its spatial indexes, as the service checks them: `Geometry` (planar
 * coordinates) needs a `boundingBox` on every spatial index, `Geography` (the default, round-earth) allows none
 * (learn.microsoft.com/azure/cosmos-db/nosql/query/geospatial-index, "Geometry data indexing").
 */
export function validateGeospatial(geospatialConfig: unknown, indexingPolicy: unknown): void {
  const type = geospatialConfig === undefined ? "Geography" : (geospatialConfig as { type?: unknown })?.type;
  if (type !== "Geography" && type !== "Geometry") {
    throw badRequest(
      `The geospatialConfig type must be 'Geography' or 'Geometry'; got ${JSON.stringify(type)}.`,
    );
  }
  const spatial = (indexingPolicy as { spatialIndexes?: unknown } | undefined)?.spatialIndexes;
  if (!Array.isArray(spatial)) return;
  for (const index of spatial as { path?: unknown; boundingBox?: unknown }[]) {
    const hasBox = index !== null && typeof index === "object" && index.boundingBox !== undefined;
    if (type === "Geometry" && !hasBox) {
      throw badRequest(
        `The spatial index on ${JSON.stringify(index?.path)} needs a boundingBox: the container's geospatialConfig is 'Geometry'.`,
      );
    }
    if (type === "Geography" && hasBox) {
      throw badRequest(
        `The spatial index on ${JSON.stringify(index?.path)} has a boundingBox, which only a 'Geometry' geospatialConfig allows.`,
      );
    }
  }
}
