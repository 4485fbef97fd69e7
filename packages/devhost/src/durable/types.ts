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
/** A HistoryEventType number. */
export type HistoryEventTypeNumber = (typeof HistoryEventType)[keyof typeof HistoryEventType];

/** A history event as the extension serializes it (PascalCase; Timestamp ISO 8601; payloads as JSON text). */
export interface HistoryEvent {
  /** The event's type. */
  EventType: HistoryEventTypeNumber;
  /** The event's id (the sequence id of the action it records, -1 when none). */
  EventId: number;
  /** Whether an earlier episode saw it already. */
  IsPlayed: boolean;
  /** When it happened (ISO 8601). */
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
/** An ActionType number. */
export type ActionTypeNumber = (typeof ActionType)[keyof typeof ActionType];

/** An action as the orchestrator returns it (JSON of the SDK's action classes; camelCase). */
export interface OrchestratorAction {
  /** The action's type. */
  actionType: ActionTypeNumber;
  /** The activity, sub-orchestrator or entity operation the action calls. */
  functionName?: string;
  /** The input it passes. */
  input?: unknown;
  /** The instance id of a sub-orchestration (or entity) it calls. */
  instanceId?: string;
  /** Retries of a call with retry. */
  retryOptions?: RetryOptionsWire;
  /** When a timer fires (ISO 8601). */
  fireAt?: string;
  /** Whether a timer was cancelled. */
  isCanceled?: boolean;
  /** The event an external event wait is for. */
  externalEventName?: string;
  /** The actions of a WhenAny or WhenAll. */
  compoundActions?: OrchestratorAction[];
  /** Other fields of the SDK's action classes. */
  [field: string]: unknown;
}

/** The SDK's RetryOptions as serialized in an action. */
export interface RetryOptionsWire {
  /** The delay before the first retry (ms). */
  firstRetryIntervalInMilliseconds: number;
  /** Attempts in all, the first one included. */
  maxNumberOfAttempts: number;
  /** What each delay is multiplied by (default 1). */
  backoffCoefficient?: number;
  /** The longest delay between attempts (ms). */
  maxRetryIntervalInMilliseconds?: number;
  /** How long retrying may go on in all (ms). */
  retryTimeoutInMilliseconds?: number;
}

/** What the host passes as the orchestrationTrigger's data (the extension's out-of-proc request). */
export interface OrchestrationTriggerInput {
  /** The instance's history so far. */
  history: HistoryEvent[];
  /** The orchestration's input. */
  input: unknown;
  /** The instance's id. */
  instanceId: string;
  /** Whether the history already holds what the episode will decide first. */
  isReplaying: boolean;
  /** The parent orchestration's instance id, null when none. */
  parentInstanceId: string | null;
  /** The highest out-of-proc schema version the host speaks. */
  upperSchemaVersion: number;
  /** The same, as the newer SDKs read it. */
  upperSchemaVersionNew: number;
  /** How long timers are split into (a TimeSpan string). */
  longRunningTimerIntervalDuration: string;
  /** The longest timer not split (a TimeSpan string). */
  maximumShortTimerDuration: string;
  /** callHttp's default polling interval of a 202 (ms; the SDK's spelling). */
  defaultHttpAsyncRequestSleepTimeMillseconds: number;
}

/** The orchestrator's reply (OrchestratorState), whether returned or carried in a thrown `$OutOfProcData$`. */
export interface OrchestratorReply {
  /** Whether the orchestrator ended (completed, failed or continued as new). */
  isDone: boolean;
  /** The actions it decided, per episode step (or flat, in older schemas). */
  actions: OrchestratorAction[][] | OrchestratorAction[];
  /** Its output, when done. */
  output?: unknown;
  /** The error it failed with, when it failed. */
  error?: string;
  /** Its custom status. */
  customStatus?: unknown;
  /** The out-of-proc schema version of the reply. */
  schemaVersion?: number;
  /** The failure's details, when it failed. */
  failureDetails?: FailureDetails;
}

/** A failure as the Durable Task framework describes it (FailureDetails). */
export interface FailureDetails {
  /** The error's type name. */
  ErrorType: string;
  /** The error's message. */
  ErrorMessage: string;
  /** Its stack trace. */
  StackTrace?: string;
  /** Whether retrying cannot help. */
  IsNonRetriable?: boolean;
  /** The error that caused it. */
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

/** An orchestration's parent, when a parent started it as a sub-orchestration. */
export interface ParentInstance {
  /** The parent's instance id. */
  instanceId: string;
  /** The parent's execution id. */
  executionId: string;
  /** The parent's sequence id of the CallSubOrchestrator action. */
  taskScheduledId: number;
  /** The parent orchestrator's name. */
  name: string;
}

/**
 * One orchestration instance (its current execution), as the engine reads and writes it and the store persists
 * it. `engine` is the engine's bookkeeping: the store saves it verbatim and never reads it.
 */
export interface OrchestrationState {
  /** The instance's id. */
  instanceId: string;
  /** The current execution's id (a new one on each continue-as-new or restart). */
  executionId: string;
  /** The orchestrator's name. */
  name: string;
  /** JSON text of the input, null when none. */
  input: string | null;
  /** Its runtime status. */
  status: RuntimeStatus;
  /** JSON text of the output (or of the failure message when Failed), null when none. */
  output: string | null;
  /** JSON text of the custom status, null when none. */
  customStatus: string | null;
  /** When it was created (ISO 8601). */
  createdTime: string;
  /** When it last changed (ISO 8601). */
  lastUpdatedTime: string;
  /** Its parent, when it is a sub-orchestration. */
  parent?: ParentInstance;
  /** Every event of the current execution, committed ones first. */
  history: HistoryEvent[];
  /** The engine's bookkeeping, saved verbatim. */
  engine: Record<string, unknown>;
}

/** A message for an instance: one new history event, delivered to the instance's next episode. */
export interface InstanceMessage {
  /** Idempotency key (docs/durable-design.md): a second message with the same key is dropped. */
  key: string;
  /** The instance the message is for. */
  instanceId: string;
  /** The execution the event is for; a message for an older execution is dropped. Absent = any. */
  executionId?: string;
  /** The history event it delivers. */
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
  /** The instance that scheduled it. */
  instanceId: string;
  /** The execution that scheduled it. */
  executionId: string;
  /** The TaskScheduled event's id. */
  taskScheduledId: number;
  /** The activity's name. */
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

/** The extension's instance query, as its HTTP API reads it (`GET instances`). */
export interface InstanceFilter {
  /** Only instances created at or after this time (ISO 8601). */
  createdTimeFrom?: string;
  /** Only instances created at or before this time (ISO 8601). */
  createdTimeTo?: string;
  /** Only instances in one of these statuses. */
  runtimeStatus?: RuntimeStatus[];
  /** Only instances whose id starts with this. */
  instanceIdPrefix?: string;
  /** Page size. */
  top?: number;
  /** Where the page starts (from the previous page). */
  continuationToken?: string;
  /** Include each instance's input. */
  showInput?: boolean;
}

/** The extension's EntityQuery, as its HTTP API reads it (`GET entities[/{name}]`). */
export interface EntityFilter {
  /** Only entities of this name (any case). */
  name?: string;
  /** Only entities whose last operation was at or after this time (ISO 8601). */
  lastOperationTimeFrom?: string;
  /** Only entities whose last operation was at or before this time (ISO 8601). */
  lastOperationTimeTo?: string;
  /** Page size; default 100. */
  top?: number;
  /** Where the page starts (from the previous page). */
  continuationToken?: string;
  /** Include each entity's state; default false. */
  fetchState?: boolean;
}

/** One entity as the extension lists it (DurableEntityStatus). */
export interface EntityStatus {
  /** The entity's name and key. */
  entityId: { name: string; key: string };
  /** When it last ran an operation (ISO 8601). */
  lastOperationTime: string;
  /** The state (parsed JSON), null when not fetched. */
  state: unknown;
}

/** The extension's CleanEntityStorageResult (camelCase, as its JSON serializer writes it). */
export interface CleanEntityStorageResult {
  /** Locks released whose holder no longer runs. */
  numberOfOrphanedLocksRemoved: number;
  /** Entities removed that had no state, no lock and no pending operation. */
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
