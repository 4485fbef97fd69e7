import type { Container, ContainerRequest, CosmosClient } from "@azure/cosmos";
import { createContainerIfNotExists, createDatabaseIfNotExists } from "@cosmos-feed/core/cosmos/ensure";

/** Where the task hub's documents live: a container with partition key `/pk`, and a lease container. */
export interface TaskHubLocation {
  client: CosmosClient;
  databaseName: string;
  containerName: string;
  leaseContainerName: string;
  /** Create the database and containers when missing (the emulator; an account where the key allows it). */
  create: boolean;
  /** Where it is, for the log line. */
  describe: string;
  /**
   * The hub container's create request (without id) when the app's container definitions have a `durable` role;
   * else {@link TASK_HUB_CONTAINER}.
   */
  containerRequest?: Omit<ContainerRequest, "id">;
}

/**
 * The dev host's own definition of the task hub container: `/pk`, and an index of only the paths the hub queries —
 * every other path unindexed, which is most of a write's RU. An app's container definitions (containers.json, role
 * `durable`) override it (TaskHubLocation.containerRequest); this project's src/shared/containers.json defines the
 * same (test/unit/containers-dev-host-only.test.ts checks they agree).
 */
export const TASK_HUB_CONTAINER: Omit<ContainerRequest, "id"> = {
  partitionKey: { paths: ["/pk"] },
  indexingPolicy: {
    indexingMode: "consistent",
    automatic: true,
    includedPaths: [
      { path: "/pk/?" },
      { path: "/kind/?" },
      { path: "/hub/?" },
      { path: "/status/?" },
      { path: "/name/?" },
      { path: "/instanceId/?" },
      { path: "/createdTime/?" },
      { path: "/fireAt/?" },
      { path: "/fireAtMs/?" },
      { path: "/lockedUntil/?" },
      { path: "/stage/*" },
      { path: "/start/key/?" },
      { path: "/claim/until/?" },
      { path: "/seq/?" },
    ],
    excludedPaths: [{ path: "/*" }],
  },
};

/** The task hub container's create request: `request` (the app's definition, else the dev host's) with `id`. */
export function taskHubContainerRequest(
  id: string,
  request: Omit<ContainerRequest, "id"> = TASK_HUB_CONTAINER,
): ContainerRequest {
  return { ...request, id };
}

/** The task hub's containers at `where`, created first when `where.create` says so. */
export async function openContainers(
  where: TaskHubLocation,
): Promise<{ container: Container; leases: Container }> {
  const database = where.client.database(where.databaseName);
  if (!where.create) {
    return {
      container: database.container(where.containerName),
      leases: database.container(where.leaseContainerName),
    };
  }
  const { database: db } = await createDatabaseIfNotExists(where.client, { id: where.databaseName });
  const { container } = await createContainerIfNotExists(
    db,
    taskHubContainerRequest(where.containerName, where.containerRequest),
  );
  const { container: leases } = await createContainerIfNotExists(db, {
    id: where.leaseContainerName,
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  return { container, leases };
}
