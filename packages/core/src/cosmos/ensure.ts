import type {
  ContainerRequest,
  ContainerResponse,
  CosmosClient,
  Database,
  DatabaseRequest,
  DatabaseResponse,
  RequestOptions,
} from "@azure/cosmos";
import { statusOf } from "./errors.js";

/**
 * The SDK's `createIfNotExists` reads, then creates on 404. Two hosts starting at the same moment (two Function App
 * instances, two dev hosts) can both read 404 and both create: the second gets 409 and the SDK throws it. A 409 here
 * means the resource exists, which is what the caller asked for, so it is read instead (statusCode 200).
 */
async function existingOn409<T>(create: () => Promise<T>, read: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (e) {
    if (statusOf(e) !== 409) throw e;
    return read();
  }
}

/** `databases.createIfNotExists`, safe when another host creates the database at the same time. */
export function createDatabaseIfNotExists(
  client: CosmosClient,
  body: DatabaseRequest,
  options?: RequestOptions,
): Promise<DatabaseResponse> {
  return existingOn409(
    () => client.databases.createIfNotExists(body, options),
    () => client.database(body.id as string).read(options),
  );
}

/** `containers.createIfNotExists`, safe when another host creates the container at the same time. */
export function createContainerIfNotExists(
  database: Database,
  body: ContainerRequest,
  options?: RequestOptions,
): Promise<ContainerResponse> {
  return existingOn409(
    () => database.containers.createIfNotExists(body, options),
    () => database.container(body.id as string).read(options),
  );
}
