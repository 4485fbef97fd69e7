/**
 * What the backend conformance suite writes: the task hub's documents as the engine builds them (documents.ts; the
 * shapes of client-operations.ts startNew, dispatcher.ts newMessageDoc, work-item-plan.ts timers, outbox and
 * history chunks), and ids unique per test, so that a run on Cosmos DB can share one container between tests and
 * runs (every assertion looks only at its own test's instances).
 */
import { randomUUID } from "node:crypto";
import { WAIT_MS } from "../../../bench/lib/until.js";
import type {
  DispatchFeed,
  DispatchOptions,
  TaskHubBackend,
} from "../../../packages/devhost/src/durable/backend.js";
import {
  type ActivityDoc,
  activityId,
  type HistoryDoc,
  historyChunks,
  type InstanceDoc,
  instanceDocOf,
  type MessageDoc,
  messageId,
  type OutboxDoc,
  outboxId,
  partitionKeyOf,
  type TimerDoc,
  timerId,
} from "../../../packages/devhost/src/durable/documents.js";
import {
  type HistoryEvent,
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
} from "../../../packages/devhost/src/durable/types.js";

/** What every group of the suite gets: the backend under test (opened once per suite). */
export interface Suite {
  backend(): TaskHubBackend;
}

/** An id prefix no other test (nor run) uses: `<label>-<8 hex>`. */
export const uniqueId = (label: string): string => `${label}-${randomUUID().slice(0, 8)}`;

/** A time (ms) of a 10 s window no other test uses, far from any real document's: createdTime filters. */
export const uniqueWindow = (): number => Date.UTC(2090, 0, 1) + Math.floor(Math.random() * 1e9) * 10_000;

export const iso = (ms: number): string => new Date(ms).toISOString();

/** An orchestration instance's document (a state as the engine stores it, its history in `chunks` chunks). */
export function instance(
  hub: string,
  instanceId: string,
  fields: Partial<Omit<OrchestrationState, "instanceId" | "history">> = {},
  chunks = 0,
): InstanceDoc {
  const at = iso(Date.UTC(2026, 0, 1));
  return instanceDocOf(
    hub,
    {
      instanceId,
      executionId: "exec1",
      name: "orchestrator",
      input: null,
      status: "Running",
      output: null,
      customStatus: null,
      createdTime: at,
      lastUpdatedTime: at,
      engine: {},
      history: [],
      ...fields,
    },
    chunks,
  );
}

/** A new instance as the client's start writes it: Pending, its start waiting on the document. */
export function startedInstance(hub: string, instanceId: string): InstanceDoc {
  const doc = instance(hub, instanceId, { status: "Pending" });
  const at = doc.createdTime;
  doc.start = {
    key: `start-${doc.executionId}`,
    instanceId,
    event: { EventType: HistoryEventType.ExecutionStarted, EventId: -1, IsPlayed: false, Timestamp: at },
    start: { name: doc.name, input: null, executionId: doc.executionId },
  };
  return doc;
}

/** An entity's instance document (`@name@key`): its bookkeeping under `engine.entity`. */
export function entity(
  hub: string,
  instanceId: string,
  lastUpdatedTime: string,
  entityState: { exists?: boolean; state?: string | null; lockedBy?: string } | undefined,
): InstanceDoc {
  return instance(hub, instanceId, {
    name: instanceId,
    lastUpdatedTime,
    engine: entityState ? { entity: entityState } : {},
  });
}

/** An event raised, as the client sends it. */
export function eventMessage(instanceId: string, key: string, input: unknown = null): InstanceMessage {
  return {
    key,
    instanceId,
    event: {
      EventType: HistoryEventType.EventRaised,
      EventId: -1,
      IsPlayed: false,
      Timestamp: iso(Date.UTC(2026, 0, 1)),
      Name: "ping",
      Input: JSON.stringify(input),
    },
  };
}

/** A message document as the dispatcher's newMessageDoc builds it. */
export function message(
  hub: string,
  instanceId: string,
  key: string,
  seq: number,
  input?: unknown,
): MessageDoc {
  return {
    id: messageId(key),
    pk: partitionKeyOf(hub, instanceId),
    kind: "message",
    hub,
    instanceId,
    seq,
    message: eventMessage(instanceId, key, input),
  };
}

/** A durable timer's document as a work item's plan builds it. */
export function timer(hub: string, instanceId: string, id: number, fireAtMs: number): TimerDoc {
  return {
    id: timerId("exec1", id),
    pk: partitionKeyOf(hub, instanceId),
    kind: "timer",
    hub,
    instanceId,
    executionId: "exec1",
    timerId: id,
    fireAt: iso(fireAtMs),
    fireAtMs,
  };
}

/** A stored activity (task hubs written before the instance claim), locked until `lockedUntil` if given. */
export function activity(
  hub: string,
  instanceId: string,
  taskScheduledId: number,
  lockedUntil?: number,
): ActivityDoc {
  return {
    id: activityId("exec1", taskScheduledId),
    pk: partitionKeyOf(hub, instanceId),
    kind: "activity",
    hub,
    item: { instanceId, executionId: "exec1", taskScheduledId, name: "activity", input: null },
    ...(lockedUntil === undefined ? {} : { lockedBy: "another-host", lockedUntil }),
  };
}

/** An outbox document of `from`: a message for another instance, delivered after the commit. */
export function outbox(hub: string, from: string, m: InstanceMessage): OutboxDoc {
  return { id: outboxId(m.key), pk: partitionKeyOf(hub, from), kind: "outbox", hub, message: m };
}

/** `n` history events (TaskScheduled), as a commit's new history. */
export function events(n: number, from = 0): HistoryEvent[] {
  return Array.from({ length: n }, (_v, i) => ({
    EventType: HistoryEventType.TaskScheduled,
    EventId: from + i,
    IsPlayed: false,
    Timestamp: iso(Date.UTC(2026, 0, 1)),
    Name: "activity",
  }));
}

/** History chunk documents of an execution, numbered from `firstChunk`. */
export function chunks(
  hub: string,
  instanceId: string,
  executionId: string,
  firstChunk: number,
  history: HistoryEvent[],
): HistoryDoc[] {
  return historyChunks(hub, instanceId, executionId, firstChunk, history);
}

/** Dispatch options for a test's feed: short lease timings (a Cosmos DB feed), failures collected. */
export function feedOptions(
  name: string,
  seen: { errors: unknown[]; lost: string[]; acquired: string[] },
): DispatchOptions {
  return {
    instanceName: name,
    pollDelayMs: 20,
    leaseAcquireIntervalMs: 200,
    leaseExpirationIntervalMs: 2_000,
    leaseRenewIntervalMs: 500,
    leaseLost: (token) => seen.lost.push(token),
    leaseAcquired: (token) => seen.acquired.push(token),
    error: (e) => seen.errors.push(e),
  };
}

/** Stops a feed, giving up after WAIT_MS: a broken stop fails its test instead of hanging it. */
export async function stopWithin(feed: DispatchFeed): Promise<void> {
  const bound = new AbortController();
  const timer = setTimeout(() => bound.abort(), WAIT_MS);
  try {
    await feed.stop({ abortSignal: bound.signal });
  } finally {
    clearTimeout(timer);
  }
}
