import { BulkOperationType, type OperationInput } from "@azure/cosmos";
import { asJson, docBytes, type MessageDoc } from "./documents.js";
import { DURABLE_LIMITS } from "./limits.js";
import type { HubStore } from "./store.js";
import type { InstanceMessage } from "./types.js";

/**
 * Lease ownership and hand-over (docs/durable-design.md, "Lease loss"): under which change feed lease each
 * instance last came to this host, whether a work item may commit, and the hand-over of results this host holds
 * but must not apply (the instance's lease moved) or cannot apply yet — each stored as a message, for whoever
 * runs the instance next.
 */

/** An event this host produced for an instance (an activity's result, a timer's firing) and the document it ends. */
export interface LocalEvent {
  message: InstanceMessage;
  /** The activity or timer document the commit deletes; the event is dropped when it is gone (recorded already). */
  sourceId: string;
  sourceKind: "activity" | "timer";
  /** False for an activity under its instance's claim (no document: a duplicate is dropped by the engine). */
  stored: boolean;
}

/**
 * What asked for a work item: change feed pages (their lease signals), or anything else (a write or result of
 * this host, the pending-work scan, a claim coming due). Only a work item asked for by pages alone, all of whose
 * leases were lost, is left to the leases' new owner: it reads those pages again. Anything else has no page to be
 * read again — dropping it could strand the instance (a lease lost and taken back by this host brings nothing
 * new) — so it runs; the commit's If-Match decides a race with the new owner.
 */
export interface Trigger {
  pages: Set<AbortSignal>;
  other: boolean;
}

export const newTrigger = (): Trigger => ({ pages: new Set(), other: false });

/** Adds what asked: a page under `signal`, or (no signal) anything else. */
export function addTrigger(t: Trigger, signal: AbortSignal | undefined): void {
  if (signal) t.pages.add(signal);
  else t.other = true;
}

export const onlyLostPages = (t: Trigger): boolean =>
  !t.other && t.pages.size > 0 && [...t.pages].every((s) => s.aborted);

/** Instances whose lease signal a host keeps. */
const OWNERS_REMEMBERED = 50_000;

/** Under what an instance last came to this host (see LeaseOwnership). */
interface Owner {
  /** The lease signal of the feed's page (fed), or the one that fires when this host loses any lease (unfed). */
  signal: AbortSignal;
  /** Unfed: the dispatch leases this host held when it first ran the instance; losing any of them counts. */
  held?: string[];
}

export class LeaseOwnership {
  /** Under what each instance last came here (see own, ownUnfed). */
  private readonly owners = new Map<string, Owner>();
  /** Fires when this host next loses (or gives up) any of its dispatch leases: the gate of unfed instances. */
  private anyLeaseLost = new AbortController();

  /**
   * @param heldLeases The dispatch lease tokens this host holds right now: a lease stops counting the moment it
   *   closes (its signal fires), while the processor's `lost` event comes only once its page and renewer ended.
   */
  constructor(private readonly heldLeases: () => string[] = () => []) {}

  /**
   * The change feed delivered documents of this instance under a lease whose signal this is: while it holds, this
   * host applies the results it holds for the instance; once it fires (the lease moved, expired or the processor
   * stopped), it hands them to the store as messages, for the lease's owner.
   */
  own(instanceId: string, signal: AbortSignal): void {
    this.remember(instanceId, { signal });
  }

  /**
   * This host runs work of an instance the feed has not brought here (just started here, or a result of its own
   * came first). Which lease covers it is not known yet, so all of them gate it: once this host loses any dispatch
   * lease it held then (or any lease later), the results it holds for the instance are handed over as messages
   * instead of committed — the lease's owner (maybe this host again) applies them. Under load the feed may not
   * have delivered the instance before the lease was lost; committing then let a host whose lease had moved
   * decide an episode.
   */
  ownUnfed(instanceId: string): void {
    if (!this.owners.has(instanceId)) {
      this.remember(instanceId, { signal: this.anyLeaseLost.signal, held: this.heldLeases() });
    }
  }

  private remember(instanceId: string, owner: Owner): void {
    this.owners.delete(instanceId);
    this.owners.set(instanceId, owner);
    if (this.owners.size > OWNERS_REMEMBERED) this.owners.delete(this.owners.keys().next().value as string);
  }

  /** This host lost or gave up a dispatch lease (the processor's `lost` and `released` events). */
  leaseLost(): void {
    this.anyLeaseLost.abort();
    this.anyLeaseLost = new AbortController();
  }

  /** An ended instance needs nothing more from this host. */
  forget(instanceId: string): void {
    this.owners.delete(instanceId);
  }

  /** The lease under which the feed last brought the instance here was lost (unfed: any lease it held then). */
  lost(instanceId: string): boolean {
    const owner = this.owners.get(instanceId);
    if (!owner) return false;
    if (owner.signal.aborted) return true;
    if (!owner.held?.length) return false;
    const now = new Set(this.heldLeases());
    return owner.held.some((token) => !now.has(token));
  }

  /** Instances the feed brought here under a lease that still holds (tests: which instances are this host's). */
  get ownedInstances(): number {
    let n = 0;
    for (const { signal, held } of this.owners.values()) if (!signal.aborted && !held) n++;
    return n;
  }

  /**
   * Whether a work item must not commit: one holding results (`live`) when the instance's lease moved (they are
   * handed over: the lease's owner applies them), one asked for by lost pages alone (see Trigger).
   */
  mustNotCommit(instanceId: string, live: LocalEvent[], trigger: Trigger): boolean {
    return live.length > 0 ? this.lost(instanceId) : onlyLostPages(trigger);
  }
}

export interface HandOverOptions {
  store: HubStore;
  newMessageDoc: (message: InstanceMessage) => MessageDoc;
  log: (level: "debug", message: string) => void;
}

/** Why results held in memory are written as messages: the lease moved, they cannot apply yet, the hub stops. */
export type HandOverReason = "lease" | "waits" | "stopping";

/**
 * Stores results this host holds for an instance as messages — each (its key makes it idempotent) with the
 * deletion of its activity or timer document in the same transactional batch — so that whoever runs the instance
 * next applies each once; a result whose document is gone was recorded already. Results go HAND_OVER_PER_BATCH to a
 * batch (within the batch byte limit); a batch refused as a whole (one of its messages exists already, one of its
 * documents is gone) is retried one result at a time, where each refusal has its meaning. `why`: the instance's
 * lease moved, the result cannot apply yet (the instance is suspended, pending, continued as new, or the result
 * needs a replay of its own), or the hub stops before applying it (dispatcher.ts, stop).
 */
export async function handOver(
  o: HandOverOptions,
  instanceId: string,
  local: LocalEvent[],
  why: HandOverReason,
): Promise<void> {
  const pk = o.store.pk(instanceId);
  const entries = local.map((l) => ({ l, doc: o.newMessageDoc(l.message) }));
  const opsOf = ({ l, doc }: (typeof entries)[number]): OperationInput[] => [
    { operationType: BulkOperationType.Create, resourceBody: asJson(doc) },
    ...(l.stored ? [{ operationType: BulkOperationType.Delete, id: l.sourceId } as OperationInput] : []),
  ];
  for (const group of batchesOf(entries, (e) => docBytes(e.doc))) {
    const whole = group.length > 1 ? await o.store.batch(pk, group.flatMap(opsOf)) : undefined;
    for (const e of group) {
      if (!whole?.ok) {
        const r = await o.store.batch(pk, opsOf(e));
        if (!r.ok && r.status === 409 && e.l.stored) await o.store.deleteIds(pk, [e.l.sourceId]);
        else if (!r.ok && r.status !== 404) throw new Error(`handing a result over failed with ${r.status}`);
      }
      o.log(
        "debug",
        why === "lease"
          ? `Instance '${instanceId}': its lease moved; ${e.l.message.key} handed over as a message.`
          : why === "stopping"
            ? `Instance '${instanceId}': the task hub is stopping; ${e.l.message.key} handed over as a message.`
            : `Instance '${instanceId}': ${e.l.message.key} cannot apply yet; it waits as a message.`,
      );
    }
  }
}

/** Results per hand-over batch: two operations each (the message, the source's deletion), ≤ 100 in all. */
export const HAND_OVER_PER_BATCH = DURABLE_LIMITS.batchOperations / 2;

/** Consecutive groups of at most HAND_OVER_PER_BATCH whose sizes add up to at most the batch byte limit. */
function batchesOf<T>(items: T[], bytes: (item: T) => number): T[][] {
  const out: T[][] = [];
  let group: T[] = [];
  let size = 0;
  for (const item of items) {
    const b = bytes(item);
    if (group.length > 0 && (group.length >= HAND_OVER_PER_BATCH || size + b > DURABLE_LIMITS.batchBytes)) {
      out.push(group);
      group = [];
      size = 0;
    }
    group.push(item);
    size += b;
  }
  if (group.length > 0) out.push(group);
  return out;
}
