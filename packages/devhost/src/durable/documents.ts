import { DURABLE_LIMITS } from "./limits.js";
import type { ActivityWorkItem, HistoryEvent, InstanceMessage, OrchestrationState } from "./types.js";

/**
 * The documents of a task hub in its Cosmos DB container (docs/durable-design.md, "Storage"): everything of one
 * instance in one logical partition (`pk` = "<hub>|<instanceId>"), ids derived from what they hold so that a
 * re-applied write lands on the same document.
 */

export interface Doc {
  /**
   * The document id, derived from what it holds (`instance`, `history-…`, `msg-…`, `activity-…`, `timer-…`,
   * `outbox-…`, `stage-…`).
   */
  id: string;
  /** The partition key: `<hub>|<instanceId>`. */
  pk: string;
  /** What kind of document it is. */
  kind: "instance" | "history" | "message" | "activity" | "timer" | "outbox" | "stage";
  /** The task hub's name. */
  hub: string;
  /** The store's etag (set on what the store returns). */
  _etag?: string;
  /** The store's last-modified time (seconds since the epoch; set on what the store returns). */
  _ts?: number;
}

/**
 * A staged commit in progress: its parts (`stage-<token>-<n>`) are applied before anything else of the instance.
 * The marked instance document is the instance as it was (readers see the commit once it is whole); the part
 * `finalPart` holds the instance document the commit ends with. Marks written before that part existed have no
 * `finalPart`: their marked document is the final one.
 */
export interface StageMarker {
  /** Names the parts: `stage-<token>-<n>`. */
  token: string;
  /** How many parts the commit has. */
  parts: number;
  /**
   * The part holding the instance document the commit ends with (absent in older marks: the marked document is the
   * final one).
   */
  finalPart?: number;
}

/**
 * The instance document (`id` "instance"): the instance's state without its history, and the engine's bookkeeping.
 */
export interface InstanceDoc extends Doc, Omit<OrchestrationState, "history"> {
  /** Always "instance". */
  kind: "instance";
  /** History chunks of the current execution: `history-<executionId>-<0 … historyChunks-1>`. */
  historyChunks: number;
  /**
   * The current execution's newest history events, after its chunks (the history is the chunks' events, then
   * these): a commit appends its events here, and writes them as a chunk only once they pass
   * DURABLE_LIMITS.inlineHistoryBytes — so a short orchestration's commits write one document each, not two.
   * Absent: none (documents written before it).
   */
  historyTail?: HistoryEvent[];
  /** UTF-8 bytes of `historyTail`'s events (each event's JSON), so that a commit need not measure them again. */
  historyTailBytes?: number;
  /** A staged commit in progress, when one is. */
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
/** An instance's claim on its pending activities: the host running them and until when. */
export interface ActivityClaim {
  /** The host (dispatch owner name) running the activities. */
  owner: string;
  /** Until when the claim holds (ms since the epoch, the hub's clock). */
  until: number;
}
/** One chunk of an execution's history. */
export interface HistoryDoc extends Doc {
  /** Always "history". */
  kind: "history";
  /** The execution the events belong to. */
  executionId: string;
  /** The chunk's number (0-based, in order). */
  chunk: number;
  /** The chunk's events, in order. */
  events: HistoryEvent[];
}
/** A message for an instance, pending until a work item consumes it. */
export interface MessageDoc extends Doc {
  /** Always "message". */
  kind: "message";
  /** The instance the message is for. */
  instanceId: string;
  /** Arrival order (a host-local timestamp + counter); ties by id. */
  seq: number;
  /** The message. */
  message: InstanceMessage;
  /** Not a document: the instance's `start`, shown as a message (nothing to delete when it is consumed). */
  virtual?: true;
}
/** A stored activity work item (task hubs written before the instance claim). */
export interface ActivityDoc extends Doc {
  /** Always "activity". */
  kind: "activity";
  /** The activity to run. */
  item: ActivityWorkItem;
  /** The dev host running it, until `lockedUntil` (ms since the epoch, the hub's clock). */
  lockedBy?: string;
  /** Until when `lockedBy` runs it (ms since the epoch, the hub's clock). */
  lockedUntil?: number;
  /** Not stored: an activity under its instance's claim, held in memory by the host running it. */
  virtual?: true;
}
/** A durable timer, due at `fireAt`. */
export interface TimerDoc extends Doc {
  /** Always "timer". */
  kind: "timer";
  /** The instance that created it. */
  instanceId: string;
  /** The execution that created it. */
  executionId: string;
  /** The timer's id (the CreateTimer action's sequence id). */
  timerId: number;
  /** When it fires (ISO 8601). */
  fireAt: string;
  /** When it fires (ms since the epoch). */
  fireAtMs: number;
}
/** A message for another instance, stored in the sender's partition until it is delivered. */
export interface OutboxDoc extends Doc {
  /** Always "outbox". */
  kind: "outbox";
  /** The message to deliver. */
  message: InstanceMessage;
}
/** One part of a staged commit: documents to write and ids to delete, applied idempotently. */
export interface StageDoc extends Doc {
  /** Always "stage". */
  kind: "stage";
  /** The staged commit it belongs to. */
  token: string;
  /** The part's number. */
  part: number;
  /** Documents the part writes. */
  upserts: WorkDoc[];
  /** Ids the part deletes. */
  deletes: string[];
  /** The last part: the instance document once every other part is applied (written with its deletion). */
  final?: InstanceDoc;
}
/** A document a work item writes besides the instance document. */
export type WorkDoc = HistoryDoc | MessageDoc | ActivityDoc | TimerDoc | OutboxDoc;
/** Any document of a task hub. */
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
    historyTail: _tail,
    historyTailBytes: _tailBytes,
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
  tail?: { events: HistoryEvent[]; bytes: number },
): InstanceDoc {
  const { history: _h, ...rest } = state;
  return {
    ...rest,
    id: INSTANCE_ID,
    pk: partitionKeyOf(hub, state.instanceId),
    kind: "instance",
    hub,
    historyChunks,
    ...(tail && tail.events.length > 0 ? { historyTail: tail.events, historyTailBytes: tail.bytes } : {}),
    ...(stage ? { stage } : {}),
  };
}

/** What one query of an instance's partition found, sorted out. */
export interface PartitionSnapshot {
  /** The instance document, when there is one. */
  instance?: InstanceDoc;
  /** The current execution's history, in order (chunks below `historyChunks` only). */
  history: HistoryEvent[];
  /** Pending messages in arrival order. */
  messages: MessageDoc[];
  /** Stored activities of the instance. */
  activities: ActivityDoc[];
  /** Pending timers of the instance. */
  timers: TimerDoc[];
  /** Outbox documents not delivered yet. */
  outbox: OutboxDoc[];
  /** Parts of a staged commit. */
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
  if (instance?.historyTail) snap.history.push(...instance.historyTail);
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
  const chunkDoc = (chunk: number, chunkEvents: HistoryEvent[]): HistoryDoc => ({
    id: historyId(executionId, chunk),
    pk,
    kind: "history",
    hub,
    executionId,
    chunk,
    events: chunkEvents,
  });
  // The usual case, one chunk: the events measured together (one JSON text, not one per event).
  if (
    events.length > 0 &&
    events.length <= DURABLE_LIMITS.chunkEvents &&
    docBytes(events) <= DURABLE_LIMITS.chunkBytes
  ) {
    return [chunkDoc(firstChunk, [...events])];
  }
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
      current = chunkDoc(firstChunk + out.length, []);
      bytes = 0;
      out.push(current);
    }
    current.events.push(e);
    bytes += size;
  }
  return out;
}
