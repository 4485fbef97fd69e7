import type { Container } from "@azure/cosmos";
import { TaskHub, type TaskHubOptions } from "../hub.js";
import { CosmosBackend } from "./backend.js";

/** Options of a `CosmosTaskHub`: a `TaskHub`'s, with its containers in place of a backend. */
export type CosmosTaskHubOptions = Omit<TaskHubOptions, "backend"> & {
  /** The task hub's container (partition key `/pk`). */
  container: Container;
  /** The lease container of its dispatch feed (`durable.<hub>.` prefix). */
  leaseContainer: Container;
};

/** The dev host's task hub on Cosmos DB: a `TaskHub` over a `CosmosBackend` of these containers. */
export class CosmosTaskHub extends TaskHub {
  constructor(options: CosmosTaskHubOptions) {
    const { container, leaseContainer, ...rest } = options;
    super({ ...rest, backend: new CosmosBackend({ container, leaseContainer, hubName: options.hubName }) });
  }
}
