import type { CosmosClient, ItemDefinition, SqlParameter, SqlQuerySpec } from "@azure/cosmos";
import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { type BindingLog, ensureContainer } from "./provision.js";

/** The `cosmosDB` input binding's options (v4 `CosmosDBv4InputOptions`; `%NAME%` already resolved). */
export interface CosmosInputOptions {
  connection: string;
  databaseName: string;
  containerName: string;
  /** Partition key value of the lookup; may hold `{param}` binding expressions. */
  partitionKey?: string;
  /** Id of the document; may hold `{param}`. */
  id?: string;
  /** A query; `{param}` becomes the SQL parameter `@param` bound to the value (never pasted into the text). */
  sqlQuery?: string;
  preferredLocations?: string;
  [other: string]: unknown;
}

/** The `cosmosDB` output binding's options (v4 `CosmosDBv4OutputOptions`). */
export interface CosmosOutputOptions {
  connection: string;
  databaseName: string;
  containerName: string;
  /** Create the database and container when a write finds them missing. */
  createIfNotExists?: boolean;
  /** Partition key path of a container created by createIfNotExists (default `/id`). */
  partitionKey?: string;
  /** RU/s of a container created by createIfNotExists. */
  containerThroughput?: number;
  preferredLocations?: string;
  [other: string]: unknown;
}

/**
 * A binding that cannot run: a `{param}` with no value in the trigger's data ("BindingExpression"), a container
 * that does not exist ("ContainerNotFound"), a value the output binding cannot write ("InvalidOutput").
 */
export class CosmosBindingError extends CosmosFeedError {}

/**
 * Binding data: what `{param}` expressions resolve against — the trigger metadata the host builds (HTTP: route
 * params by name, `Query` and `Headers` objects; other triggers: their own metadata). Keys compare
 * case-insensitively, as the host's; dotted paths (`{Query.id}`, `{Headers.x-id}`) walk objects.
 */
export type BindingData = Record<string, unknown>;

function lookup(data: BindingData, path: string): unknown {
  let node: unknown = data;
  for (const part of path.split(".")) {
    if (node === null || typeof node !== "object") return undefined;
    const entries = Object.entries(node as Record<string, unknown>);
    const hit =
      entries.find(([k]) => k === part) ?? entries.find(([k]) => k.toLowerCase() === part.toLowerCase());
    node = hit?.[1];
  }
  return node;
}

const EXPRESSION = /\{([A-Za-z_][\w.-]*)\}/g;

function expressionValue(data: BindingData, path: string, where: string): unknown {
  const v = lookup(data, path);
  if (v === undefined || v === null) {
    throw new CosmosBindingError(`No value for named parameter '${path}' in the binding's ${where}.`, {
      code: "BindingExpression",
      statusCode: 400,
    });
  }
  return v;
}

/** Replaces `{param}` in a string option (id, partitionKey) with its value from the binding data. */
export function resolveBindingExpressions(template: string, data: BindingData, where = "options"): string {
  return template.replace(EXPRESSION, (_, path: string) => {
    const v = expressionValue(data, path, where);
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

/**
 * As the extension's CosmosDBSqlResolutionPolicy: each `{param}` in sqlQuery becomes a SQL parameter bound to its
 * value, so a value is never SQL text. (The extension names it `@param`; a dotted path such as `{Query.id}` — which
 * the extension cannot bind, azure-webjobs-sdk-extensions#595 — becomes `@Query_id` here.)
 */
export function toSqlQuerySpec(sqlQuery: string, data: BindingData): SqlQuerySpec {
  const parameters = new Map<string, SqlParameter>();
  const query = sqlQuery.replace(EXPRESSION, (_, path: string) => {
    const name = `@${path.replace(/[.-]/g, "_")}`;
    if (!parameters.has(name)) {
      const v = expressionValue(data, path, "sqlQuery");
      parameters.set(name, { name, value: v as SqlParameter["value"] });
    }
    return name;
  });
  return { query, parameters: [...parameters.values()] };
}

export interface ReadCosmosInputOptions {
  options: CosmosInputOptions;
  client: CosmosClient;
  /** What `{param}` resolves against. */
  triggerMetadata?: BindingData;
}

/**
 * The input binding's value, as the extension computes it: with `id` the document (partition key
 * `partitionKey`, or none) or null when it does not exist; with `sqlQuery` the array of results (scoped to
 * `partitionKey` when set); with neither, every document of the container (scoped likewise).
 */
export async function readCosmosInput(o: ReadCosmosInputOptions): Promise<unknown> {
  const { options, client } = o;
  const data = o.triggerMetadata ?? {};
  if (options.id !== undefined && options.sqlQuery !== undefined) {
    throw new CosmosBindingError("A Cosmos DB input binding takes 'id' or 'sqlQuery', not both.", {
      code: "InvalidInput",
      statusCode: 400,
    });
  }
  const container = client.database(options.databaseName).container(options.containerName);
  const partitionKey =
    options.partitionKey === undefined
      ? undefined
      : resolveBindingExpressions(options.partitionKey, data, "partitionKey");
  try {
    if (options.id !== undefined) {
      const id = resolveBindingExpressions(options.id, data, "id");
      // The SDK answers a missing item with a 404 response, not an error; a missing container is an error here.
      const { resource } = await container.item(id, partitionKey).read();
      if (resource) return resource;
      if (!(await containerExists(client, options))) {
        throw notFound(options.databaseName, options.containerName, undefined, false);
      }
      return null;
    }
    const spec: SqlQuerySpec =
      options.sqlQuery !== undefined ? toSqlQuerySpec(options.sqlQuery, data) : { query: "SELECT * FROM c" };
    const { resources } = await container.items
      .query(spec, partitionKey !== undefined ? { partitionKey } : {})
      .fetchAll();
    return resources;
  } catch (e) {
    if (statusOf(e) === 404) throw notFound(options.databaseName, options.containerName, e, false);
    throw e;
  }
}

async function containerExists(client: CosmosClient, o: { databaseName: string; containerName: string }) {
  try {
    await client.database(o.databaseName).container(o.containerName).read();
    return true;
  } catch (e) {
    if (statusOf(e) === 404) return false;
    throw e;
  }
}

function notFound(db: string, container: string, cause: unknown, output: boolean): CosmosBindingError {
  return new CosmosBindingError(
    `The container '${container}' (in database '${db}') does not exist.${output ? " To automatically create the container, set 'createIfNotExists' to 'true'." : ""}`,
    { code: "ContainerNotFound", statusCode: 404, cause },
  );
}

export interface WriteCosmosOutputOptions {
  options: CosmosOutputOptions;
  client: CosmosClient;
  /** What the function set: a document, an array of documents, a JSON string of either, or nothing. */
  value: unknown;
  /** Create the database and container even without createIfNotExists (the emulator's mode). */
  createMissing?: boolean;
  /** Creates the missing container instead of the extension's way (the emulator's: the app's definitions first). */
  create?: () => Promise<void>;
  log?: BindingLog;
}

/** Normalizes the output value to documents; every one must be an object with a string `id` (the service needs one). */
export function outputDocuments(value: unknown): ItemDefinition[] {
  if (value === undefined || value === null) return [];
  let v = value;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      throw new CosmosBindingError("The Cosmos DB output value is a string that is not JSON.", {
        code: "InvalidOutput",
        statusCode: 400,
      });
    }
  }
  const docs = Array.isArray(v) ? v : [v];
  return docs.map((d, i) => {
    const where = Array.isArray(v) ? `item ${i} of the Cosmos DB output` : "the Cosmos DB output";
    if (d === null || typeof d !== "object" || Array.isArray(d)) {
      throw new CosmosBindingError(`${where} is not a JSON object.`, {
        code: "InvalidOutput",
        statusCode: 400,
      });
    }
    const id = (d as { id?: unknown }).id;
    // The extension's .NET SDK generates no id; the service refuses a document without one.
    if (typeof id !== "string" || id === "") {
      throw new CosmosBindingError(`${where} has no string 'id'; Cosmos DB needs one.`, {
        code: "InvalidOutput",
        statusCode: 400,
      });
    }
    return d as ItemDefinition;
  });
}

/**
 * Writes the output binding's value as the extension's CosmosDBAsyncCollector does: each document is upserted
 * (no create-only mode, no ETag); when the container is missing and createIfNotExists is set, the database and
 * container are created (partition key `partitionKey`, RU/s `containerThroughput`) and the write repeated. Every
 * document is checked before any is written. Returns the number of documents written.
 */
export async function writeCosmosOutput(o: WriteCosmosOutputOptions): Promise<number> {
  const docs = outputDocuments(o.value);
  if (docs.length === 0) return 0;
  const { options, client } = o;
  const container = client.database(options.databaseName).container(options.containerName);
  // Metadata may carry the flag as a string when it came from a %SETTING%.
  const create = String(options.createIfNotExists) === "true" || o.createMissing === true;
  let created = false;
  for (const doc of docs) {
    try {
      await container.items.upsert(doc, { disableAutomaticIdGeneration: true });
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
      if (!create || created) throw notFound(options.databaseName, options.containerName, e, true);
      if (o.create) await o.create();
      else
        await ensureContainer({
          client,
          databaseName: options.databaseName,
          containerName: options.containerName,
          definition: { partitionKey: { paths: [options.partitionKey || "/id"] } },
          throughput:
            typeof options.containerThroughput === "number" ? options.containerThroughput : undefined,
          log: o.log ?? (() => {}),
          role: "output binding",
        });
      created = true;
      await container.items.upsert(doc, { disableAutomaticIdGeneration: true });
    }
  }
  return docs.length;
}
