/**
 * Shapes shared by the Durable Task roles of the dev host (docs/durable-design.md). History events and actions
 * are the out-of-process protocol's (durable-functions 3.5.0: history/HistoryEventType.js, actions/ActionType.js);
 * the rest is what the Cosmos DB task hub stores.
 */

/** DurableTask.Core's HistoryEventType numbers, as the JS SDK reads them. */
export const HistoryEventType = {
  ExecutionStarted: 0,
  ExecutionCompleted: 1,
  ExecutionFailed: 2,
  ExecutionTerminated: 3,
  TaskScheduled: 4,
  TaskCompleted: 5,
  TaskFailed: 6,
  SubOrchestrationInstanceCreated: 7,
  SubOrchestrationInstanceCompleted: 8,
  SubOrchestrationInstanceFailed: 9,
  TimerCreated: 10,
  TimerFired: 11,
  OrchestratorStarted: 12,
  OrchestratorCompleted: 13,
  EventSent: 14,
  EventRaised: 15,
  ContinueAsNew: 16,
  GenericEvent: 17,
  HistoryState: 18,
  ExecutionSuspended: 19,
  ExecutionResumed: 20,
} as const;
export type HistoryEventTypeNumber = (typeof HistoryEventType)[keyof typeof HistoryEventType];

/** A history event as the extension serializes it (PascalCase; Timestamp ISO 8601; payloads as JSON text). */
export interface HistoryEvent {
  EventType: HistoryEventTypeNumber;
  EventId: number;
  IsPlayed: boolean;
  Timestamp: string;
  /** Event-specific fields: Name, Input, Result, TaskScheduledId, TimerId, FireAt, Reason, Details, FailureDetails … */
  [field: string]: unknown;
}

/** The JS SDK's ActionType numbers. */
export const ActionType = {
  CallActivity: 0,
  CallActivityWithRetry: 1,
  CallSubOrchestrator: 2,
  CallSubOrchestratorWithRetry: 3,
  ContinueAsNew: 4,
  CreateTimer: 5,
  WaitForExternalEvent: 6,
  CallEntity: 7,
  CallHttp: 8,
  SignalEntity: 9,
  WhenAny: 11,
  WhenAll: 12,
  LockEntities: 13,
  ReleaseEntities: 14,
} as const;
export type ActionTypeNumber = (typeof ActionType)[keyof typeof ActionType];

/** An action as the orchestrator returns it (JSON of the SDK's action classes; camelCase). */
export interface OrchestratorAction {
  actionType: ActionTypeNumber;
  functionName?: string;
  input?: unknown;
  instanceId?: string;
  retryOptions?: RetryOptionsWire;
  fireAt?: string;
  isCanceled?: boolean;
  externalEventName?: string;
  compoundActions?: OrchestratorAction[];
  [field: string]: unknown;
}

/** The SDK's RetryOptions as serialized in an action. */
export interface RetryOptionsWire {
  firstRetryIntervalInMilliseconds: number;
  maxNumberOfAttempts: number;
  backoffCoefficient?: number;
  maxRetryIntervalInMilliseconds?: number;
  retryTimeoutInMilliseconds?: number;
}

/** What the host passes as the orchestrationTrigger's data (the extension's out-of-proc request). */
export interface OrchestrationTriggerInput {
  history: HistoryEvent[];
  input: unknown;
  instanceId: string;
  isReplaying: boolean;
  parentInstanceId: string | null;
  upperSchemaVersion: number;
  upperSchemaVersionNew: number;
  longRunningTimerIntervalDuration: string;
  maximumShortTimerDuration: string;
  defaultHttpAsyncRequestSleepTimeMillseconds: number;
}

/** The orchestrator's reply (OrchestratorState), whether returned or carried in a thrown `$OutOfProcData$`. */
export interface OrchestratorReply {
  isDone: boolean;
  actions: OrchestratorAction[][] | OrchestratorAction[];
  output?: unknown;
  error?: string;
  customStatus?: unknown;
  schemaVersion?: number;
  failureDetails?: FailureDetails;
}

export interface FailureDetails {
  ErrorType: string;
  ErrorMessage: string;
  StackTrace?: string;
  IsNonRetriable?: boolean;
  InnerFailure?: FailureDetails;
}

/** Runs the orchestrator function once: what it returned, or what it threw. Never throws itself. */
export type OrchestratorInvoker = (
  name: string,
  triggerInput: OrchestrationTriggerInput,
) => Promise<{ returned: unknown } | { thrown: unknown }>;

/** The Durable runtime statuses (OrchestrationRuntimeStatus). */
export type RuntimeStatus =
  | "Pending"
  | "Running"
  | "Completed"
  | "ContinuedAsNew"
  | "Failed"
  | "Terminated"
  | "Suspended";

export interface ParentInstance {
  instanceId: string;
  executionId: string;
  /** The parent's sequence id of the CallSubOrchestrator action. */
  taskScheduledId: number;
  name: string;
}

/**
 * One orchestration instance (its current execution), as the engine reads and writes it and the store persists
 * it. `engine` is the engine's bookkeeping: the store saves it verbatim and never reads it.
 */
export interface OrchestrationState {
  instanceId: string;
  executionId: string;
  name: string;
  /** JSON text of the input, null when none. */
  input: string | null;
  status: RuntimeStatus;
  /** JSON text of the output (or of the failure message when Failed), null when none. */
  output: string | null;
  /** JSON text of the custom status, null when none. */
  customStatus: string | null;
  createdTime: string;
  lastUpdatedTime: string;
  parent?: ParentInstance;
  /** Every event of the current execution, committed ones first. */
  history: HistoryEvent[];
  engine: Record<string, unknown>;
}

/** A message for an instance: one new history event, delivered to the instance's next episode. */
export interface InstanceMessage {
  /** Idempotency key (docs/durable-design.md): a second message with the same key is dropped. */
  key: string;
  instanceId: string;
  /** The execution the event is for; a message for an older execution is dropped. Absent = any. */
  executionId?: string;
  event: HistoryEvent;
  /**
   * For ExecutionStarted: the orchestrator's name, input, parent, and the instance's version (ExecutionStarted's
   * Version, what context.df.version reads; absent = "").
   */
  start?: {
    name: string;
    input: string | null;
    parent?: ParentInstance;
    executionId: string;
    version?: string;
  };
  /** A critical section's grant (entity-locks.ts): the lock's id and entities, released if the grant comes late. */
  lockGrant?: { id: string; set: string[] };
}

/** An activity the engine scheduled. */
export interface ActivityWorkItem {
  instanceId: string;
  executionId: string;
  taskScheduledId: number;
  name: string;
  /** JSON text of the input as the action carried it, null when none. */
  input: string | null;
}

/** What an episode asks the task hub to do after its commit. */
export type OutboundWork =
  | { kind: "activity"; item: ActivityWorkItem }
  | { kind: "timer"; instanceId: string; executionId: string; timerId: number; fireAt: string }
  | { kind: "cancelTimer"; instanceId: string; executionId: string; timerId: number }
  /** A message for another instance (or this one: sub-orchestration start, parent notification, raised event). */
  | { kind: "message"; message: InstanceMessage };

export interface EpisodeResult {
  state: OrchestrationState;
  /** New history events of this episode (already appended to state.history). */
  newEvents: HistoryEvent[];
  work: OutboundWork[];
  /** False when the message cannot apply now and must stay pending (e.g. an event while Suspended). */
  consumed: boolean;
  /** Why a message was dropped (stale execution, duplicate completion, instance not found …), for the log. */
  dropped?: string;
}

/** The client operations the HTTP API and the durableClient binding need (implemented by CosmosTaskHub). */
export interface TaskHubClient {
  /** The task hub's name. */
  readonly hubName: string;
  /** `version`: the instance's version; without one, host.json's defaultVersion (as the extension). */
  startNew(
    name: string,
    options: { instanceId?: string; input?: string | null; version?: string },
  ): Promise<{ instanceId: string }>;
  /** The instance's status; undefined when there is none. History and input only when asked for. */
  getStatus(
    instanceId: string,
    options?: { showHistory?: boolean; showHistoryOutput?: boolean; showInput?: boolean },
  ): Promise<InstanceStatus | undefined>;
  /** Instances matching `filter`, a page at a time. */
  list(filter: InstanceFilter): Promise<{ instances: InstanceStatus[]; continuationToken?: string }>;
  /** Raises an external event (input as JSON text) on a running instance. */
  raiseEvent(
    instanceId: string,
    eventName: string,
    input: string | null,
  ): Promise<"ok" | "notFound" | "notRunning">;
  /** Terminates a running instance. */
  terminate(instanceId: string, reason: string | null): Promise<"ok" | "notFound" | "notRunning">;
  /** Suspends a running instance. */
  suspend(instanceId: string, reason: string | null): Promise<"ok" | "notFound" | "notRunning">;
  /** Resumes a suspended instance. */
  resume(instanceId: string, reason: string | null): Promise<"ok" | "notFound" | "notRunning">;
  /** Deletes an ended instance's state and history; resolves to the number of instances deleted (0 or 1). */
  purge(instanceId: string): Promise<number>;
  /** Deletes the ended instances matching `filter`; resolves to how many. */
  purgeMany(filter: InstanceFilter): Promise<number>;
  /** Queues an operation for the entity `@name@key` (created by its first operation); input as JSON text. */
  signalEntity(name: string, key: string, operation: string, input: string | null): Promise<void>;
  /** The entity's stored state (JSON text), undefined when it never ran an operation. */
  readEntity(name: string, key: string): Promise<{ exists: boolean; state: string | undefined } | undefined>;
  /** One page of the entities that have a state (the extension's ListEntitiesAsync). */
  listEntities(filter: EntityFilter): Promise<{ entities: EntityStatus[]; continuationToken?: string }>;
  /**
   * The extension's CleanEntityStorageAsync: removes entities with no state, no lock and no pending operation, and
   * releases locks held by orchestrations that are no longer running; the counts of each.
   */
  cleanEntityStorage(options: {
    removeEmptyEntities: boolean;
    releaseOrphanedLocks: boolean;
  }): Promise<CleanEntityStorageResult>;
  /**
   * Resolves when the instance may have changed: at once when it is known to differ from `since` (the
   * `lastUpdatedTime` the caller last read), when the hub commits or sees a change of it, at the hub's next poll
   * tick, or after `timeoutMs`. The caller reads the status again.
   */
  waitForChange(instanceId: string, timeoutMs: number, signal?: AbortSignal, since?: string): Promise<void>;
}

export interface InstanceFilter {
  createdTimeFrom?: string;
  createdTimeTo?: string;
  runtimeStatus?: RuntimeStatus[];
  instanceIdPrefix?: string;
  top?: number;
  continuationToken?: string;
  showInput?: boolean;
}

/** The extension's EntityQuery, as its HTTP API reads it (`GET entities[/{name}]`). */
export interface EntityFilter {
  /** Only entities of this name (any case). */
  name?: string;
  lastOperationTimeFrom?: string;
  lastOperationTimeTo?: string;
  /** Page size; default 100. */
  top?: number;
  continuationToken?: string;
  /** Include each entity's state; default false. */
  fetchState?: boolean;
}

/** One entity as the extension lists it (DurableEntityStatus). */
export interface EntityStatus {
  entityId: { name: string; key: string };
  lastOperationTime: string;
  /** The state (parsed JSON), null when not fetched. */
  state: unknown;
}

/** The extension's CleanEntityStorageResult (camelCase, as its JSON serializer writes it). */
export interface CleanEntityStorageResult {
  numberOfOrphanedLocksRemoved: number;
  numberOfEmptyEntitiesRemoved: number;
}

/** The status the extension's HTTP API returns (DurableOrchestrationStatus, camelCase). */
export interface InstanceStatus {
  /** The orchestrator's name. */
  name: string;
  /** The instance's id. */
  instanceId: string;
  /** Its runtime status. */
  runtimeStatus: RuntimeStatus;
  /** Its input (when asked for). */
  input: unknown;
  /** Its custom status. */
  customStatus: unknown;
  /** Its output, once it ended. */
  output: unknown;
  /** When it was created (ISO 8601). */
  createdTime: string;
  /** When it last changed (ISO 8601). */
  lastUpdatedTime: string;
  /** Its history, when asked for. */
  historyEvents?: unknown[];
}

/**
 * One message applied to an instance (engine.ts `applyMessage`, applyMessages with one message). `state` is
 * undefined when the instance does not exist (only ExecutionStarted creates one). Pure except for `invoke`.
 */
export type ApplyMessage = (
  state: OrchestrationState | undefined,
  message: InstanceMessage,
  now: Date,
  invoke: OrchestratorInvoker,
) => Promise<EpisodeResult>;

/**
 * The replay engine's entry point (engine.ts `applyMessages`): one work item — the instance's pending messages in
 * arrival order — applied with at most one orchestrator replay. Pure except for `invoke`. Messages it leaves
 * unconsumed stay pending: they cannot apply yet (an event while Suspended) or need a replay of their own (call
 * again while a call consumes something).
 */
export type ApplyMessages = (
  state: OrchestrationState | undefined,
  messages: InstanceMessage[],
  now: Date,
  invoke: OrchestratorInvoker,
  limits: EngineLimits,
) => Promise<WorkItemResult>;

/**
 * What the engine applies beyond the history: the payload limit, and host.json's durableTask.defaultVersion — the
 * version a sub-orchestration started without one gets, as the extension gives it (absent = "").
 */
export interface EngineLimits {
  maxPayloadBytes: number;
  defaultVersion?: string;
}

export interface WorkItemResult {
  /** Undefined only when no message created the instance. */
  state: OrchestrationState | undefined;
  /** Events appended to state.history by this work item (all of it when the work item started a new execution). */
  newEvents: HistoryEvent[];
  work: OutboundWork[];
  /** Keys of the messages consumed (applied or dropped). */
  consumed: string[];
  /** The consumed messages that were dropped, and why (stale execution, duplicate completion …), for the log. */
  dropped: { key: string; reason: string }[];
  /** Orchestrator invocations made: 0 or 1. */
  invocations: number;
}

/** Runs an activity function once: its return value as JSON text, or the failure. Never throws. */
export type ActivityInvoker = (
  item: ActivityWorkItem,
) => Promise<{ result: string | null } | { failure: FailureDetails }>;
