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
 * means the resource exists, which is what the caller asked for, so these read it instead (statusCode 200).
 */
export async function createDatabaseIfNotExists(
  client: CosmosClient,
  body: DatabaseRequest,
  options?: RequestOptions,
): Promise<DatabaseResponse> {
  try {
    return await client.databases.createIfNotExists(body, options);
  } catch (e) {
    if (statusOf(e) !== 409) throw e;
    return client.database(body.id as string).read(options);
  }
}

/** As {@link createDatabaseIfNotExists}, for a container of `database`. */
export async function createContainerIfNotExists(
  database: Database,
  body: ContainerRequest,
  options?: RequestOptions,
): Promise<ContainerResponse> {
  try {
    return await database.containers.createIfNotExists(body, options);
  } catch (e) {
    if (statusOf(e) !== 409) throw e;
    return database.container(body.id as string).read(options);
  }
}
