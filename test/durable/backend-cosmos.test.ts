/**
 * The task hub backend conformance suite (backend-conformance.ts) on the Cosmos DB backend: one container made as
 * the dev host makes it (taskHubContainerRequest: `/pk` and the hub's indexing policy) on the embedded emulator, and
 * its lease container. The memory backend runs the same suite (backend-memory.test.ts).
 */

import { CosmosBackend } from "../../packages/devhost/src/durable/cosmos-backend/backend.js";
import { taskHubContainerRequest } from "../../packages/devhost/src/durable/cosmos-backend/containers.js";
import { startTestEmulator, uniqueName } from "../support/emulator.js";
import { backendConformance } from "./backend-conformance.js";

backendConformance("Cosmos DB", async () => {
  const t = await startTestEmulator();
  const { database } = await t.client.databases.create({ id: uniqueName("backend-conformance") });
  const { container } = await database.containers.create(taskHubContainerRequest(uniqueName("hub")));
  const { container: leaseContainer } = await database.containers.create({
    id: uniqueName("hub-leases"),
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  return {
    backend: new CosmosBackend({ container, leaseContainer, hubName: "ConformanceHub" }),
    close: () => t.close(),
  };
});
