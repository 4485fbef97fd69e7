import type { Clock } from "@cosmos-feed/core/clock";
import type { TaskHubBackend } from "./backend.js";
import type { EntityInvoker } from "./entity-engine.js";
import type { TokenGetter } from "./http-activity.js";
import { DURABLE_HUB_SETTINGS } from "./settings.js";
import type { ActivityInvoker, ApplyMessages, OrchestratorInvoker } from "./types.js";

/** A task hub's options (hub.ts): its backend, its invokers, its limits and timings, and their defaults. */

export type LogLevel = "trace" | "debug" | "information" | "warning" | "error";

/**
 * Options of a `TaskHub`: its backend, how it invokes orchestrators and activities, limits and timings (ms).
 */
export interface TaskHubOptions {
  /** Where the hub's documents are, and how other hosts' writes reach this one (Cosmos DB, memory). */
  backend: TaskHubBackend;
  /** The task hub's name (host.json `extensions.durableTask.hubName`); the backend's. */
  hubName: string;
  /** Runs one orchestrator episode in the app. */
  invokeOrchestrator: OrchestratorInvoker;
  /** Runs one activity in the app. */
  invokeActivity: ActivityInvoker;
  /** Where the hub's log lines go. */
  log?: (level: LogLevel, message: string) => void;
  /** Change feed poll delay when nothing is new (ms). */
  feedPollDelayMs?: number;
  /** How often work another host left (timers coming due, expired activity claims, outbox, stages) is looked for (ms). */
  timerScanIntervalMs?: number;
  /** Activities run at once, at most (host.json maxConcurrentActivityFunctions). */
  maxConcurrentActivities?: number;
  /** Orchestrator episodes run at once, at most (host.json maxConcurrentOrchestratorFunctions). */
  maxConcurrentOrchestrations?: number;
  /** Largest input, output or event payload (bytes). */
  maxPayloadBytes?: number;
  /** host.json durableTask.defaultVersion: the version of instances and sub-orchestrations started without one. */
  defaultVersion?: string;
  /** Attempts of a work item that keeps failing before it is given up. */
  maxWorkItemAttempts?: number;
  /** How long an activity claim holds before another host may run it (ms). */
  activityLockMs?: number;
  /** How often a waiting client (create-and-wait, status waits) re-reads the instance (ms). */
  waitPollMs?: number;
  /** How long a start made here waits for its first episode, to be created with it in one commit (ms; 0: never). */
  startEpisodeWaitMs?: number;
  /** On stop, how long running activities may take to hand their results on (ms). */
  stopGraceMs?: number;
  /** On stop, how long orchestration work items in flight may take to end before they are abandoned (ms). */
  stopWorkItemsMs?: number;
  /** context.df.callHttp's timeout of one HTTP exchange (ms). */
  httpTimeoutMs?: number;
  /** How callHttp's managed identity token source gets a token (DefaultAzureCredential unless a test passes one). */
  getHttpToken?: TokenGetter;
  /** Lease timing of the dispatch processor (ms). */
  leaseAcquireIntervalMs?: number;
  /** Lease expiration interval of the dispatch processor (ms). */
  leaseExpirationIntervalMs?: number;
  /** Lease renewal interval of the dispatch processor (ms). */
  leaseRenewIntervalMs?: number;
  /** The dispatch processor's instance name (the lease Owner). */
  instanceName?: string;
  /** Durable time: episode timestamps, timers, activity claims (tests pass a FakeClock). */
  clock?: Clock;
  /** Runs an entity function (df.app.entity); without it an entity operation fails with the reason. */
  invokeEntity?: EntityInvoker;
  /**
   * Replaces the engine (tests).
   * @internal Not part of the package's API: stripped from its .d.ts (`stripInternal`).
   */
  applyMessages?: ApplyMessages;
}

const d = DURABLE_HUB_SETTINGS;
/** The defaults of a `TaskHubOptions`' limits and timings (DURABLE_HUB_SETTINGS' defaults). */
export const TaskHubDefaults = {
  feedPollDelayMs: d.feedPollDelayMs.default,
  timerScanIntervalMs: d.timerScanIntervalMs.default,
  maxConcurrentActivities: d.maxConcurrentActivities.default,
  maxConcurrentOrchestrations: d.maxConcurrentOrchestrations.default,
  maxPayloadBytes: d.maxPayloadBytes.default,
  maxWorkItemAttempts: d.maxWorkItemAttempts.default,
  activityLockMs: d.activityLockMs.default,
  waitPollMs: d.waitPollMs.default,
  startEpisodeWaitMs: d.startEpisodeWaitMs.default,
  stopGraceMs: d.stopGraceMs.default,
  stopWorkItemsMs: d.stopWorkItemsMs.default,
  httpTimeoutMs: d.httpTimeoutMs.default,
} as const;
