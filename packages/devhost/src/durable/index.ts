// `@cosmos-feed/devhost/durable`: the dev host's Durable Task engine on Cosmos DB as a library — the task hub and
// the building blocks it is made of (its backend interface with the in-memory and Cosmos DB backends, their
// documents and typed errors), its container's definition, its settings, the durable HTTP API, and the types a
// client of the hub sees. The dev host wires these up itself (runtime.ts); the benchmarks (bench/durable) drive a
// hub directly through this entry.

export { meteredContainer } from "../dashboard/tally.js";
export type {
  CommitOutcome,
  CreateOutcome,
  DispatchContext,
  DispatchFeed,
  DispatchHandler,
  DispatchOptions,
  EntityRecord,
  HandedOverResult,
  Page,
  PendingWork,
  TaskHubBackend,
  WorkItemCommit,
} from "./backend.js";
export { TaskHubStorageError } from "./backend.js";
export {
  createDurableApiHandler,
  type DurableApiHandler,
  type DurableApiOptions,
  type DurableApiRequest,
  type DurableApiResponse,
} from "./client-api.js";
export { DURABLE_WEBHOOK_PATH } from "./client-binding.js";
export { TASK_HUB_CONTAINER, taskHubContainerRequest } from "./cosmos-backend/containers.js";
export { CosmosTaskHub, type CosmosTaskHubOptions } from "./cosmos-backend/task-hub.js";
export type {
  ActivityClaim,
  ActivityDoc,
  AnyDoc,
  Doc,
  HistoryDoc,
  InstanceDoc,
  MessageDoc,
  OutboxDoc,
  PartitionSnapshot,
  StageDoc,
  StageMarker,
  TimerDoc,
  WorkDoc,
} from "./documents.js";
export type { EntityTriggerInput } from "./entity-batch.js";
export type { EntityInvoker, EntityOutcome } from "./entity-engine.js";
export { TaskHubError } from "./errors.js";
export type { TokenGetter } from "./http-activity.js";
export { type LogLevel, TaskHub, TaskHubDefaults, type TaskHubOptions } from "./hub.js";
export {
  InvalidContinuationTokenError,
  MemoryBackend,
  type MemoryBackendOptions,
} from "./memory-backend/index.js";
export { DURABLE_HUB_SETTINGS, type DurableHubSettings, readDurableHubSettings } from "./settings.js";
export type { EntityRow } from "./status-view.js";
export {
  type ActivityInvoker,
  type ActivityWorkItem,
  type CleanEntityStorageResult,
  type EntityFilter,
  type EntityStatus,
  type FailureDetails,
  type HistoryEvent,
  HistoryEventType,
  type HistoryEventTypeNumber,
  type InstanceFilter,
  type InstanceMessage,
  type InstanceStatus,
  type OrchestrationState,
  type OrchestrationTriggerInput,
  type OrchestratorInvoker,
  type ParentInstance,
  type RuntimeStatus,
  type TaskHubClient,
} from "./types.js";
