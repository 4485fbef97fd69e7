import type { TaskHubBackend } from "./backend.js";
import type { MessageDoc } from "./documents.js";
import type { InstanceMessage } from "./types.js";

/**
 * Lease ownership and hand-over (docs/durable-design.md, "Lease loss"): under which change feed lease each
 * instance last came to this host, whether a work item may commit, and the hand-over of results this host holds
 * but must not apply (the instance's lease moved) or cannot apply yet — each stored as a message, for whoever
 * runs the instance next (the backend's abandonOrchestrationWorkItem).
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
  backend: TaskHubBackend;
  newMessageDoc: (message: InstanceMessage) => MessageDoc;
  log: (level: "debug", message: string) => void;
}

/** Why results held in memory are written as messages: the lease moved, they cannot apply yet, the hub stops. */
export type HandOverReason = "lease" | "waits" | "stopping";

/**
 * Stores results this host holds for an instance as messages (the backend's abandonOrchestrationWorkItem: each with
 * the deletion of its activity or timer document, so that whoever runs the instance next applies each once; a
 * result whose document is gone was recorded already). `why`: the instance's lease moved, the result cannot apply
 * yet (the instance is suspended, pending, continued as new, or the result needs a replay of its own), or the hub
 * stops before applying it (dispatcher.ts, stop).
 */
export async function handOver(
  o: HandOverOptions,
  instanceId: string,
  local: LocalEvent[],
  why: HandOverReason,
): Promise<void> {
  await o.backend.abandonOrchestrationWorkItem(
    instanceId,
    local.map((l) => ({
      message: o.newMessageDoc(l.message),
      ...(l.stored ? { sourceId: l.sourceId } : {}),
    })),
  );
  for (const l of local) {
    o.log(
      "debug",
      why === "lease"
        ? `Instance '${instanceId}': its lease moved; ${l.message.key} handed over as a message.`
        : why === "stopping"
          ? `Instance '${instanceId}': the task hub is stopping; ${l.message.key} handed over as a message.`
          : `Instance '${instanceId}': ${l.message.key} cannot apply yet; it waits as a message.`,
    );
  }
}
