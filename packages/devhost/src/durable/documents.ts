import { DURABLE_LIMITS } from "./limits.js";
import type { ActivityWorkItem, HistoryEvent, InstanceMessage, OrchestrationState } from "./types.js";

/**
 * The documents of a task hub in its Cosmos DB container (docs/durable-design.md, "Storage"): everything of one
 * instance in one logical partition (`pk` = "<hub>|<instanceId>"), ids derived from what they hold so that a
 * re-applied write lands on the same document.
 */

export interface Doc {
  id: string;
  pk: string;
  kind: "instance" | "history" | "message" | "activity" | "timer" | "outbox" | "stage";
  hub: string;
  _etag?: string;
  _ts?: number;
}

/**
 * A staged commit in progress: its parts (`stage-<token>-<n>`) are applied before anything else of the instance.
 * The marked instance document is the instance as it was (readers see the commit once it is whole); the part
 * `finalPart` holds the instance document the commit ends with. Marks written before that part existed have no
 * `finalPart`: their marked document is the final one.
 */
export interface StageMarker {
  token: string;
  parts: number;
  finalPart?: number;
}

export interface InstanceDoc extends Doc, Omit<OrchestrationState, "history"> {
  kind: "instance";
  /** History chunks of the current execution: `history-<executionId>-<0 … historyChunks-1>`. */
  historyChunks: number;
  stage?: StageMarker;
  /**
   * The start of a new execution waiting for its work item: written with the instance by a client's start or
   * restart, or by the commit of a continue-as-new, instead of a message document of its own (one write less
   * each way). Cleared by the commit that applies it.
   */
  start?: InstanceMessage;
  /**
   * The activities the history schedules and has no result for are being run by `owner` until `until` (ms since
   * the epoch, the hub's clock; renewed while they run). They have no documents of their own: after `until` any
   * host takes the claim and runs them again (docs/durable-design.md, "Activities").
   */
  claim?: ActivityClaim;
}
export interface ActivityClaim {
  owner: string;
  until: number;
}
export interface HistoryDoc extends Doc {
  kind: "history";
  executionId: string;
  chunk: number;
  events: HistoryEvent[];
}
export interface MessageDoc extends Doc {
  kind: "message";
  instanceId: string;
  /** Arrival order (a host-local timestamp + counter); ties by id. */
  seq: number;
  message: InstanceMessage;
  /** Not a document: the instance's `start`, shown as a message (nothing to delete when it is consumed). */
  virtual?: true;
}
export interface ActivityDoc extends Doc {
  kind: "activity";
  item: ActivityWorkItem;
  /** The dev host running it, until `lockedUntil` (ms since the epoch, the hub's clock). */
  lockedBy?: string;
  lockedUntil?: number;
  /** Not stored: an activity under its instance's claim, held in memory by the host running it. */
  virtual?: true;
}
export interface TimerDoc extends Doc {
  kind: "timer";
  instanceId: string;
  executionId: string;
  timerId: number;
  fireAt: string;
  fireAtMs: number;
}
export interface OutboxDoc extends Doc {
  kind: "outbox";
  message: InstanceMessage;
}
/** One part of a staged commit: documents to write and ids to delete, applied idempotently. */
export interface StageDoc extends Doc {
  kind: "stage";
  token: string;
  part: number;
  upserts: WorkDoc[];
  deletes: string[];
  /** The last part: the instance document once every other part is applied (written with its deletion). */
  final?: InstanceDoc;
}
export type WorkDoc = HistoryDoc | MessageDoc | ActivityDoc | TimerDoc | OutboxDoc;
export type AnyDoc = InstanceDoc | WorkDoc | StageDoc;

export const INSTANCE_ID = "instance";
export const partitionKeyOf = (hub: string, instanceId: string): string => `${hub}|${instanceId}`;
export const historyId = (executionId: string, chunk: number): string =>
  `history-${executionId}-${String(chunk).padStart(6, "0")}`;
export const messageId = (key: string): string => `msg-${key}`;
export const activityId = (executionId: string, taskScheduledId: number): string =>
  `activity-${executionId}-${taskScheduledId}`;
export const timerId = (executionId: string, id: number): string => `timer-${executionId}-${id}`;
export const outboxId = (key: string): string => `outbox-${key}`;
export const stageId = (token: string, part: number): string => `stage-${token}-${part}`;

/** Bytes a document takes in a request (its JSON, UTF-8). */
export function docBytes(d: object): number {
  return Buffer.byteLength(JSON.stringify(d), "utf8");
}

/** The orchestration state an instance document and its history chunks hold (system properties dropped). */
export function stateOf(inst: InstanceDoc, history: HistoryEvent[]): OrchestrationState {
  const {
    id: _id,
    pk: _pk,
    kind: _kind,
    hub: _hub,
    historyChunks: _c,
    stage: _s,
    start: _start,
    claim: _claim,
    _etag,
    _ts,
    ...rest
  } = inst;
  const state = { ...(rest as unknown as OrchestrationState), history };
  for (const k of Object.keys(state))
    if (k.startsWith("_")) delete (state as unknown as Record<string, unknown>)[k];
  return state;
}

/** The instance document for a state (history goes to chunks). */
export function instanceDocOf(
  hub: string,
  state: OrchestrationState,
  historyChunks: number,
  stage?: StageMarker,
): InstanceDoc {
  const { history: _h, ...rest } = state;
  return {
    ...rest,
    id: INSTANCE_ID,
    pk: partitionKeyOf(hub, state.instanceId),
    kind: "instance",
    hub,
    historyChunks,
    ...(stage ? { stage } : {}),
  };
}

/** What one query of an instance's partition found, sorted out. */
export interface PartitionSnapshot {
  instance?: InstanceDoc;
  /** The current execution's history, in order (chunks below `historyChunks` only). */
  history: HistoryEvent[];
  /** Pending messages in arrival order. */
  messages: MessageDoc[];
  activities: ActivityDoc[];
  timers: TimerDoc[];
  outbox: OutboxDoc[];
  stages: StageDoc[];
  /** History chunks of other executions (continue-as-new, restart): garbage to delete. */
  staleHistory: string[];
  /** Every document id in the partition. */
  ids: Set<string>;
}

export function snapshotOf(docs: AnyDoc[]): PartitionSnapshot {
  const instance = docs.find((d): d is InstanceDoc => d.kind === "instance");
  const chunks: HistoryDoc[] = [];
  const snap: PartitionSnapshot = {
    history: [],
    messages: [],
    activities: [],
    timers: [],
    outbox: [],
    stages: [],
    staleHistory: [],
    ids: new Set(docs.map((d) => d.id)),
    ...(instance ? { instance } : {}),
  };
  for (const d of docs) {
    if (d.kind === "history") {
      if (instance && d.executionId === instance.executionId && d.chunk < instance.historyChunks)
        chunks.push(d);
      else if (!instance || d.executionId !== instance.executionId) snap.staleHistory.push(d.id);
    } else if (d.kind === "message") snap.messages.push(d);
    else if (d.kind === "activity") snap.activities.push(d);
    else if (d.kind === "timer") snap.timers.push(d);
    else if (d.kind === "outbox") snap.outbox.push(d);
    else if (d.kind === "stage") snap.stages.push(d);
  }
  if (instance?.start) snap.messages.push(startAsMessage(instance, instance.start));
  snap.history = chunks.sort((a, b) => a.chunk - b.chunk).flatMap((c) => c.events);
  snap.messages.sort((a, b) => a.seq - b.seq || a.id.localeCompare(b.id));
  return snap;
}

/** An instance's waiting start as the message its work item applies (first: it precedes everything else). */
export function startAsMessage(
  instance: Pick<InstanceDoc, "pk" | "hub" | "instanceId">,
  start: InstanceMessage,
): MessageDoc {
  return {
    id: messageId(start.key),
    pk: instance.pk,
    kind: "message",
    hub: instance.hub,
    instanceId: instance.instanceId,
    seq: 0,
    message: start,
    virtual: true,
  };
}

/**
 * An execution's new history events as chunk documents, numbered from `firstChunk`: each at most
 * DURABLE_LIMITS.chunkEvents events and DURABLE_LIMITS.chunkBytes bytes (an event larger than that alone).
 */
export function historyChunks(
  hub: string,
  instanceId: string,
  executionId: string,
  firstChunk: number,
  events: HistoryEvent[],
): HistoryDoc[] {
  const pk = partitionKeyOf(hub, instanceId);
  const out: HistoryDoc[] = [];
  let current: HistoryDoc | undefined;
  let bytes = 0;
  for (const e of events) {
    const size = docBytes(e);
    if (
      !current ||
      current.events.length >= DURABLE_LIMITS.chunkEvents ||
      (bytes + size > DURABLE_LIMITS.chunkBytes && current.events.length > 0)
    ) {
      const chunk = firstChunk + out.length;
      current = {
        id: historyId(executionId, chunk),
        pk,
        kind: "history",
        hub,
        executionId,
        chunk,
        events: [],
      };
      bytes = 0;
      out.push(current);
    }
    current.events.push(e);
    bytes += size;
  }
  return out;
}
