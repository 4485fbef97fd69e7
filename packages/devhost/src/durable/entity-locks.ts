import { entitySchedulerId, parseEntitySchedulerId } from "./entity-batch.js";
import { derivedId, historyEvent } from "./protocol.js";
import {
  type HistoryEvent,
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
  type OrchestratorAction,
  type OutboundWork,
} from "./types.js";

/**
 * Critical sections (`context.df.lock`), as the Durable extension runs them (DurableOrchestrationContext.LockAsync
 * and ReleaseLocks, TaskEntityShim.ProcessLockRequest, SchedulerState.LockedBy): the orchestration sends ONE lock
 * request — the extension's RequestMessage with `lockset` (the entities, sorted by scheduler id, no duplicates) and
 * `pos` — to the first entity of the set; each entity, when the request's turn comes in its queue, takes the lock
 * (locked by the orchestration's instance id) and forwards the request to the next; the last answers the
 * orchestration with an EventRaised named after the request id (what durable-functions' LockTask waits for).
 * Everyone takes the entities in the same global order, so two sections over overlapping sets never deadlock.
 * Releasing sends each entity of the set an EventRaised "release" (`{parent, id}`, the extension's ReleaseMessage).
 * Pure: the shapes both sides exchange, the orchestration's bookkeeping of its section, and the releases.
 */

/** The event name of a lock release (EntityMessageEventNames.ReleaseMessageEventName). */
export const RELEASE_EVENT = "release";
/**
 * The lock id of the release `cleanEntityStorage` sends for a lock whose owner is gone (the extension's
 * CleanEntityStorageAsync does the same): it does not know the lock request's id, so an entity locked by that
 * parent takes it whatever its lock id.
 */
export const ORPHANED_LOCK_RELEASE_ID = "fix-orphaned-lock";

/**
 * How many lock request ids an entity remembers (newest kept): a request delivered again — the outbox delivers at
 * least once — is dropped instead of locking the entity a second time for a section long over.
 */
export const REMEMBERED_LOCK_REQUESTS = 64;

/** What the last entity of the set answers (the extension's text; the SDK reads nothing of it). */
const GRANTED = "Lock Acquisition Completed";

/** A lock request on the wire (RequestMessage with LockSet and Position). */
export interface LockRequestWire {
  id: string;
  parent: string;
  parentExecution?: string;
  lockset: { name: string; key: string }[];
  pos: number;
}

/** A release on the wire (ReleaseMessage): `id` absent releases whatever lock `parent` holds. */
export interface ReleaseWire {
  parent: string;
  id?: string;
}

/** An orchestration's critical section (its bookkeeping): requested, or held once the grant arrived. */
export interface CriticalSection {
  /** The lock request id (the SDK's lockRequestId): the grant is the EventRaised of that name. */
  id: string;
  /** Scheduler ids (`@name@key`), in the order they are locked. */
  set: string[];
  held: boolean;
}

/** The lock set of a LockEntities action: scheduler ids, sorted as the SDK sorts them, without duplicates. */
export function lockSetOf(a: OrchestratorAction): string[] {
  const raw = Array.isArray(a.lockSet) ? (a.lockSet as { name?: unknown; key?: unknown }[]) : [];
  const ids = raw
    .filter((e) => typeof e?.name === "string" && typeof e.key === "string")
    .map((e) => entitySchedulerId(e.name as string, e.key as string));
  return [...new Set(ids)].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
}

/** Reads a message's lock request, if it is one (an "op" whose RequestMessage has a `lockset`). */
export function readLockRequest(input: unknown): LockRequestWire | undefined {
  const r = input as Partial<LockRequestWire> | null;
  if (!r || typeof r !== "object" || !Array.isArray(r.lockset) || typeof r.id !== "string") return undefined;
  if (typeof r.parent !== "string" || typeof r.pos !== "number") return undefined;
  return r as LockRequestWire;
}

export function readRelease(input: unknown): ReleaseWire | undefined {
  const r = input as Partial<ReleaseWire> | null;
  if (!r || typeof r !== "object" || typeof r.parent !== "string") return undefined;
  return typeof r.id === "string" ? { parent: r.parent, id: r.id } : { parent: r.parent };
}

const schedulerIdOf = (e: { name: string; key: string }) => entitySchedulerId(e.name, e.key);

/** The lock request as a message to the entity at its position (idempotent per request and position). */
export function lockRequestMessage(request: LockRequestWire, at: string): InstanceMessage {
  const target = schedulerIdOf(request.lockset[request.pos] as { name: string; key: string });
  return {
    key: `entity-lock-${request.id}-${request.pos}`,
    instanceId: target,
    event: historyEvent(HistoryEventType.EventRaised, at, { Name: "op", Input: JSON.stringify(request) }),
  };
}

/**
 * An orchestration's LockEntities action with sequence id `id`: its EventSent (the SDK takes the request id from its
 * Input to match the grant), the message to the first entity, and the section to keep.
 */
export function lockActionWork(
  state: OrchestrationState,
  a: OrchestratorAction,
  set: string[],
  id: number,
  at: string,
): { event: HistoryEvent; work: OutboundWork; section: CriticalSection } {
  const requestId =
    typeof a.lockRequestId === "string" && a.lockRequestId !== ""
      ? a.lockRequestId
      : derivedId(state.executionId, "lock", id);
  const request: LockRequestWire = {
    id: requestId,
    parent: state.instanceId,
    parentExecution: state.executionId,
    lockset: set.map((s) => parseEntitySchedulerId(s) as { name: string; key: string }),
    pos: 0,
  };
  const message = lockRequestMessage(request, at);
  return {
    event: historyEvent(
      HistoryEventType.EventSent,
      at,
      { InstanceId: message.instanceId, Name: "op", Input: message.event.Input },
      id,
    ),
    work: { kind: "message", message },
    section: { id: requestId, set, held: false },
  };
}

/** The grant the last entity of the set sends the orchestration; it carries the set (released if it comes late). */
export function lockGrantMessage(request: LockRequestWire, at: string): InstanceMessage {
  return {
    key: `entity-lock-granted-${request.id}`,
    instanceId: request.parent,
    ...(request.parentExecution ? { executionId: request.parentExecution } : {}),
    event: historyEvent(HistoryEventType.EventRaised, at, {
      Name: request.id,
      Input: JSON.stringify({ result: GRANTED }),
    }),
    lockGrant: { id: request.id, set: request.lockset.map(schedulerIdOf) },
  };
}

/** The release of one entity of a section (idempotent per section and entity). */
export function releaseMessage(entity: string, parent: string, lockId: string, at: string): InstanceMessage {
  const release: ReleaseWire = { parent, id: lockId };
  return {
    key: `entity-release-${lockId}-${entity}`,
    instanceId: entity,
    event: historyEvent(HistoryEventType.EventRaised, at, {
      Name: RELEASE_EVENT,
      Input: JSON.stringify(release),
    }),
  };
}

/** Releases of every entity of a section, as outbound work. */
export function releaseWork(
  section: { id: string; set: string[] },
  parent: string,
  at: string,
): OutboundWork[] {
  return section.set.map((e) => ({ kind: "message", message: releaseMessage(e, parent, section.id, at) }));
}

/**
 * The orchestration's ReleaseEntities action, first id `id`: the SDK counts one id per entity of the set (the
 * extension sends one event each), so each release is an EventSent under its own id, and a message.
 */
export function releaseActionWork(
  state: OrchestrationState,
  section: CriticalSection,
  id: number,
  at: string,
): { events: HistoryEvent[]; work: OutboundWork[] } {
  const work = releaseWork(section, state.instanceId, at);
  const events = work.map((w, i) => {
    const m = (w as { message: InstanceMessage }).message;
    return historyEvent(
      HistoryEventType.EventSent,
      at,
      { InstanceId: m.instanceId, Name: RELEASE_EVENT, Input: m.event.Input },
      id + i,
    );
  });
  return { events, work };
}

/** The section an orchestration's state holds (granted), if any: what its end releases. */
export function heldSection(state: { engine?: Record<string, unknown> }): CriticalSection | undefined {
  const s = (state.engine as { lock?: CriticalSection } | undefined)?.lock;
  return s?.held ? s : undefined;
}

/**
 * What becomes of a grant that reaches a running execution: "wait" for the section it waits for (the replay takes
 * it); "duplicate" when that section holds already; "stale" when no section of it waits for this one — another
 * execution's, or released before the grant came — which is answered by releasing what it granted (else those
 * entities stay locked for ever). Undefined for any other message.
 */
export function grantFate(
  m: InstanceMessage,
  engine: Record<string, unknown> | undefined,
): "wait" | "duplicate" | "stale" | undefined {
  const g = m.lockGrant;
  if (!g) return undefined;
  const s = (engine as { lock?: CriticalSection } | undefined)?.lock;
  if (!s || s.id !== g.id) return "stale";
  return s.held ? "duplicate" : "wait";
}

/** The releases of the section an ending instance holds (terminate, poison): none when it holds none. */
export function releaseHeld(state: OrchestrationState, at: string): OutboundWork[] {
  const held = heldSection(state);
  return held ? releaseWork(held, state.instanceId, at) : [];
}
