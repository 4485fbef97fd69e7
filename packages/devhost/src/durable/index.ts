// `@cosmos-feed/devhost/durable`: the dev host's Durable Task engine on Cosmos DB as a library — the task hub, its
// container's definition, its settings, the durable HTTP API, and the types a client of the hub sees. The dev host
// wires these up itself (runtime.ts); the benchmarks (bench/durable) drive a hub directly through this entry.

export { meteredContainer } from "../dashboard/tally.js";
export { createDurableApiHandler } from "./client-api.js";
export { DURABLE_WEBHOOK_PATH } from "./client-binding.js";
export { TASK_HUB_CONTAINER, taskHubContainerRequest } from "./cosmos-backend/containers.js";
export { CosmosTaskHub, type CosmosTaskHubOptions } from "./cosmos-backend/task-hub.js";
export type { EntityInvoker } from "./entity-engine.js";
export { type DurableHubSettings, readDurableHubSettings } from "./settings.js";
export type { InstanceStatus, RuntimeStatus, TaskHubClient } from "./types.js";
