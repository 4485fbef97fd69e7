import { DURABLE_LIMITS } from "./limits.js";
import { type HistoryEvent, HistoryEventType } from "./types.js";

/**
 * Exactly once and in order, for the operations an orchestration sends to an entity (what the extension's entity
 * scheduler does with its message sorter): the messages of one orchestration's episode are delivered in parallel,
 * and a message can be delivered again (a host that died between delivering it and deleting its outbox document,
 * two hosts delivering the same one) after the entity consumed it. So each request names its sender's position
 * (`pos`: the sequence id of its EventSent, increasing within an execution) and the position of the sender's
 * previous request to the same entity (`prev`); the entity remembers, per sender execution, the last position it
 * applied: a request at or below it is a duplicate (consumed, not applied), one whose predecessor is not applied
 * yet waits (stays a message) — for at most DURABLE_LIMITS.entityReorderWindowMs, as a sender is remembered.
 * Requests from the client and from entities carry no position: they apply in arrival order.
 */

export interface SenderPosition {
  /** The sender's request id, and its execution. */
  pos?: number;
  prev?: number;
  parent?: string;
  parentExecution?: string;
}

/** What an entity keeps per sender execution (`parent|execution`): the last position applied, and when. */
export type SendersApplied = Record<string, { last: number; at: number }>;

/**
 * The position of the orchestration's previous operation request to `target` in this execution (its history and
 * this episode's). Lock requests and releases (entity-locks.ts) are sent to entities too but are not ordered
 * operations — the entity never records them as applied — so they are not counted.
 */
export function previousPosition(target: string, ...events: HistoryEvent[][]): number | undefined {
  let prev: number | undefined;
  for (const list of events)
    for (const e of list)
      if (e.EventType === HistoryEventType.EventSent && e.InstanceId === target && isOperationRequest(e))
        prev = e.EventId;
  return prev;
}

/** An EventSent that carries an operation ("op" without a lock set), not a lock request or a release. */
function isOperationRequest(e: HistoryEvent): boolean {
  if (e.Name !== "op") return false;
  try {
    const input = JSON.parse(String(e.Input)) as { lockset?: unknown } | null;
    return !(input && typeof input === "object" && "lockset" in input);
  } catch {
    return false;
  }
}

const senderOf = (r: SenderPosition): string | undefined =>
  r.pos === undefined || r.parent === undefined ? undefined : `${r.parent}|${r.parentExecution ?? ""}`;

/**
 * What to do with a request now: apply it, drop it (applied already), or let it wait for its predecessor. A
 * request older than the window applies whatever came before it (its predecessor is taken as lost, as the
 * extension does once the window passed).
 */
export function orderOf(
  r: SenderPosition,
  applied: SendersApplied,
  sentAt: number,
  now: number,
): "apply" | "duplicate" | "wait" {
  const sender = senderOf(r);
  if (sender === undefined || r.pos === undefined) return "apply";
  const last = applied[sender]?.last;
  if (last !== undefined && r.pos <= last) return "duplicate";
  if (r.prev === undefined || (last !== undefined && last >= r.prev)) return "apply";
  return now - sentAt > DURABLE_LIMITS.entityReorderWindowMs ? "apply" : "wait";
}

/** Records an applied request. */
export function recordApplied(r: SenderPosition, applied: SendersApplied, now: number): void {
  const sender = senderOf(r);
  if (sender !== undefined && r.pos !== undefined) applied[sender] = { last: r.pos, at: now };
}

/** The senders to keep: those heard from within the window (the entity's state stays bounded). */
export function pruneSenders(applied: SendersApplied, now: number): SendersApplied {
  const kept: SendersApplied = {};
  for (const [k, v] of Object.entries(applied))
    if (now - v.at <= DURABLE_LIMITS.entityReorderWindowMs) kept[k] = v;
  return kept;
}
