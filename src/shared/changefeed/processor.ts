import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Container } from "@azure/cosmos";
import { EqualPartitionsBalancingStrategy, type LoadBalancingStrategy } from "./balancing/strategy.js";
import {
  assignSuccessors,
  handedTo,
  nextSlotStart,
  type WatchSchedule,
  watchParticipants,
} from "./balancing/watch-schedule.js";
import { isAvailable, type Lease, LeaseMode, newLease } from "./leases/lease.js";
import { acquireAs, checkpointAs, releaseAs, renewAs } from "./leases/mutations.js";
import { openLeaseStore } from "./leases/open.js";
import { LeaseLostError, LeaseOperationCounters, type LeaseStore } from "./leases/store.js";
import { LeaseView } from "./leases/view.js";
import {
  ChangeFeedDefaults,
  type ChangeFeedProcessorOptions,
  InvalidProcessorOptionsError,
  type ResolvedOptions,
  resolveOptions,
} from "./options.js";
import type { StartPosition } from "./processing/feed-reader.js";
import { type ChangeFeedHandler, PartitionWorker, sleep, type WorkerExit } from "./processing/worker.js";

/** Events a processor emits (all carry the lease token). */
export interface ChangeFeedProcessorEvents {
  acquired: [leaseToken: string];
  released: [leaseToken: string];
  lost: [leaseToken: string, reason: string];
  checkpointed: [leaseToken: string, continuationToken: string, documents: number];
  split: [parentToken: string, childTokens: string[]];
  /** A version-0 lease whose partition was merged away became a version-1 (EPK) lease of the same range. */
  merged: [oldToken: string, newToken: string];
  deadLettered: [leaseToken: string, documents: number];
  error: [error: unknown, leaseToken: string | undefined];
}

interface OwnedLease {
  lease: Lease;
  /** The owner the lease document is expected to carry (this host, or null while draining on stop). */
  expectedOwner: string | null;
  abort: AbortController;
  done: Promise<void>;
  /** Serializes this lease's writes (renew vs checkpoint), so they do not 412 each other. */
  writes: Promise<unknown>;
}

/**
 * A change feed processor whose lease container is interchangeable with the .NET one's (and the Azure
 * Functions trigger's): same documents, same balancing. See docs/changefeed.md.
 */
export class ChangeFeedProcessor<
  T = Record<string, unknown>,
> extends EventEmitter<ChangeFeedProcessorEvents> {
  readonly counters = new LeaseOperationCounters();
  private readonly options: ResolvedOptions;
  private readonly strategy: LoadBalancingStrategy;
  private store: LeaseStore | undefined;
  private view: LeaseView | undefined;
  /** Balancing rounds run one at a time (the timer's and the watch's). */
  private balancing: Promise<void> = Promise.resolve();
  private readonly owned = new Map<string, OwnedLease>();
  private lifecycle = new AbortController();
  private loops: Promise<void>[] = [];
  private startPosition: StartPosition = { kind: "now" };
  private state: "stopped" | "starting" | "running" | "stopping" = "stopped";

  constructor(
    private readonly input: ChangeFeedProcessorOptions & { accountEndpoint?: string },
    private readonly handler: ChangeFeedHandler<T>,
  ) {
    super();
    this.options = resolveOptions(input, randomUUID);
    this.strategy =
      input.balancingStrategy ?? new EqualPartitionsBalancingStrategy(this.options.leaseExpirationInterval);
  }

  get instanceName(): string {
    return this.options.instanceName;
  }

  /** Lease tokens this host currently processes. */
  ownedLeaseTokens(): string[] {
    return [...this.owned.values()].filter((o) => o.expectedOwner !== null).map((o) => o.lease.leaseToken);
  }

  get leaseStore(): LeaseStore {
    if (!this.store) throw new Error("The processor has not been started.");
    return this.store;
  }

  private get leaseView(): LeaseView {
    if (!this.view) throw new Error("The processor has not been started.");
    return this.view;
  }

  async start(): Promise<void> {
    if (this.state !== "stopped") throw new Error(`Cannot start a processor that is ${this.state}.`);
    this.state = "starting";
    try {
      this.lifecycle = new AbortController();
      this.store = await this.createStore();
      await this.bootstrap();
      const o = this.options;
      this.startPosition = o.startFromBeginning
        ? { kind: "beginning" }
        : o.startFromTime
          ? { kind: "time", time: o.startFromTime }
          : // As .NET >= 3.59: "now" is pinned to the start time (less 1 s), so a restart does not skip changes.
            { kind: "time", time: new Date(Date.now() - 1000) };
      this.view = new LeaseView(this.store);
      await this.view.load();
      await this.balanceOnce();
      this.loops = [
        // The watch: this host's slots of the lease feed; a release seen there is balanced at once, so a
        // stopping host's successor takes over within a slot (see balancing/watch-schedule.ts).
        this.loop(
          (now) => this.nextWatchAt(now) - now,
          async () => {
            const changed = await this.leaseView.refresh();
            if (changed.some((l) => l.owner === null)) await this.balanceOnce();
          },
        ),
        this.loop(
          () => o.leaseAcquireInterval,
          () => this.balanceOnce(),
        ),
        this.loop(
          () => o.leaseRenewInterval,
          () => this.renewDue(),
        ),
      ];
      this.state = "running";
    } catch (e) {
      this.state = "stopped";
      this.lifecycle.abort();
      throw e;
    }
  }

  private createStore(): Promise<LeaseStore> {
    return openLeaseStore(
      this.input.monitoredContainer,
      this.input.leaseContainer,
      this.options.prefix,
      this.counters,
      this.input.accountEndpoint,
    );
  }

  /** .NET's bootstrap: unless `.info` exists, take `.lock`, create missing leases, write `.info`, drop `.lock`. */
  private async bootstrap(): Promise<void> {
    const store = this.leaseStore;
    const mode = this.options.allVersions ? LeaseMode.AllVersionsAndDeletes : LeaseMode.LatestVersion;
    const existing = await store.listAll();
    if (existing.length > 0 && existing[0].mode !== mode) {
      throw new InvalidProcessorOptionsError(
        `Switching the change feed mode from '${existing[0].mode}' to '${mode}' is not allowed for the same lease prefix.`,
      );
    }
    while (!(await store.isInitialized())) {
      const lock = await store.acquireInitLock();
      if (!lock) {
        await sleep(
          Math.min(ChangeFeedDefaults.bootstrapRetryDelay, this.options.leaseAcquireInterval),
          this.lifecycle.signal,
        );
        if (this.lifecycle.signal.aborted) throw new Error("The processor was stopped during bootstrap.");
        continue;
      }
      try {
        await this.createMissingLeases(mode);
        await store.markInitialized();
      } finally {
        await store.releaseInitLock(lock);
      }
    }
  }

  private async createMissingLeases(mode: LeaseMode): Promise<void> {
    const store = this.leaseStore;
    const { resources: ranges } = await this.input.monitoredContainer.readPartitionKeyRanges().fetchAll();
    const leases = await store.listAll();
    for (const r of ranges) {
      const covered = leases.some(
        (l) =>
          (l.version === 0 && l.leaseToken === r.id) ||
          (l.version === 1 &&
            l.feedRange &&
            (l.feedRange.min === r.minInclusive || l.feedRange.max === r.maxExclusive)),
      );
      if (covered) continue;
      await store.create(
        newLease(
          store.prefix,
          store.layout,
          { id: r.id, min: r.minInclusive, max: r.maxExclusive },
          null,
          mode,
        ),
      );
    }
  }

  /** Runs `tick` after each wait of `delayMs(now)` until the processor stops; a failed tick is reported. */
  private loop(delayMs: (nowMs: number) => number, tick: () => Promise<void>): Promise<void> {
    const signal = this.lifecycle.signal;
    return (async () => {
      while (!signal.aborted) {
        await sleep(delayMs(Date.now()), signal);
        if (signal.aborted) break;
        try {
          await tick();
        } catch (e) {
          this.report(e, undefined);
        }
      }
    })();
  }

  private watchSchedule(nowMs: number): WatchSchedule {
    const o = this.options;
    return {
      participants: watchParticipants(
        this.leaseView.leases(),
        o.instanceName,
        nowMs,
        o.leaseExpirationInterval,
      ),
      watchSlot: o.leaseWatchInterval,
    };
  }

  /** This host's next watch slot; every leaseAcquireInterval at the latest, and then only when alone or off. */
  private nextWatchAt(nowMs: number): number {
    const o = this.options;
    const latest = nowMs + o.leaseAcquireInterval;
    if (o.leaseWatchInterval === 0) return latest;
    const schedule = this.watchSchedule(nowMs);
    // Alone, nobody can hand this host a lease; a newcomer shows up in the view within an acquire interval.
    if (schedule.participants.length < 2) return latest;
    return Math.min(latest, nextSlotStart(schedule, o.instanceName, nowMs) ?? latest);
  }

  /**
   * The leases as the balancer sees them: a lease handed to a successor on stop counts as the successor's
   * while the hand-off is fresh (one acquire interval) and the successor alive, so nobody else takes it and
   * the successor does.
   */
  private effectiveLeases(nowMs: number): Lease[] {
    const o = this.options;
    const leases = this.leaseView.leases();
    // Only a live successor (one that owns a lease, or this host) holds a hand-off: after a whole-app shutdown
    // the leases are plainly available to whoever starts next.
    const alive = new Set(watchParticipants(leases, o.instanceName, nowMs, o.leaseExpirationInterval));
    return leases.map((l) => {
      const to = handedTo(l, nowMs, o.leaseAcquireInterval);
      return to && alive.has(to) ? { ...l, owner: to } : l;
    });
  }

  /** One balancing round (one at a time), from the lease view: no request unless a lease is taken. */
  private balanceOnce(): Promise<void> {
    const run = this.balancing.then(() => this.balanceFromView());
    this.balancing = run.catch(() => undefined);
    return run;
  }

  private async balanceFromView(): Promise<void> {
    const store = this.leaseStore;
    const view = this.leaseView;
    const me = this.options.instanceName;
    const now = Date.now();
    const all = this.effectiveLeases(now);
    const byToken = new Map(view.leases().map((l) => [l.leaseToken, l]));
    for (const [token, o] of this.owned) {
      const seen = byToken.get(token);
      if (o.expectedOwner === me && seen && seen.owner !== me) this.stopLease(token, "stolen");
    }
    // Leases the view says are this host's but that do not run here: handed to it, or left from before.
    const toTake = all.filter((l) => l.owner === me && !this.owned.has(l.leaseToken));
    for (const l of this.strategy.selectLeasesToTake(all, me, now)) {
      if (!this.owned.has(l.leaseToken) && !toTake.includes(l)) toTake.push(l);
    }
    for (const l of toTake) {
      if (this.lifecycle.signal.aborted) return;
      const stored = view.get(l.id) ?? l;
      try {
        const ranged = stored.feedRange ? stored : await this.withFeedRange(stored);
        const acquired = await store.update(ranged, acquireAs(stored.owner, me));
        view.apply(acquired);
        if (this.startLease(acquired)) this.emit("acquired", acquired.leaseToken);
      } catch (e) {
        if (!(e instanceof LeaseLostError)) this.report(e, l.leaseToken);
        else if (e.reason === "gone") view.forget(stored);
      }
    }
  }

  /** A lease without FeedRange (V2-library era): look its partition key range up by id, as .NET does on acquire. */
  private async withFeedRange(lease: Lease): Promise<Lease> {
    const { resources } = await this.input.monitoredContainer.readPartitionKeyRanges().fetchAll();
    const r = resources.find((x) => x.id === lease.leaseToken);
    if (!r)
      throw new Error(`Lease ${lease.leaseToken} has no FeedRange and no partition key range has that id.`);
    return { ...lease, feedRange: { min: r.minInclusive, max: r.maxExclusive } };
  }

  /**
   * Renews owned leases that are due: a lease is rewritten when fewer than two renew intervals remain before
   * it would expire, so an idle lease costs one write per (expiration − 2 × renew interval), not one read and
   * one write per renew interval as in .NET, and a failed renewal still gets a second chance.
   */
  private async renewDue(): Promise<void> {
    const o = this.options;
    const now = Date.now();
    for (const [token, owned] of this.owned) {
      if (owned.expectedOwner !== o.instanceName) continue;
      if (now - owned.lease.timestampMs + 2 * o.leaseRenewInterval < o.leaseExpirationInterval) continue;
      try {
        await this.write(owned, renewAs(o.instanceName));
      } catch (e) {
        if (e instanceof LeaseLostError) this.stopLease(token, e.reason);
        else this.report(e, token);
      }
    }
  }

  /** Applies a mutation to an owned lease through the store (serialized per lease). */
  private write(owned: OwnedLease, mutate: (l: Lease) => Lease, after?: () => void): Promise<Lease> {
    const run = owned.writes.then(async () => {
      const next = await this.leaseStore.update(owned.lease, mutate);
      owned.lease = next;
      this.view?.apply(next);
      // Runs before the next queued write starts (e.g. a checkpoint queued behind a release sees Owner null).
      after?.();
      return next;
    });
    owned.writes = run.catch(() => undefined);
    return run;
  }

  /** Starts a worker for the lease, unless one already runs for it here (then false: one worker per lease). */
  private startLease(lease: Lease): boolean {
    // A split's children are created with Owner = this host before handleSplit starts them, so a balancing
    // round in between takes them too; a second worker would orphan the first (both deliver every change).
    if (this.owned.has(lease.leaseToken)) return false;
    const abort = new AbortController();
    const owned: OwnedLease = {
      lease,
      expectedOwner: this.options.instanceName,
      abort,
      done: Promise.resolve(),
      writes: Promise.resolve(),
    };
    this.owned.set(lease.leaseToken, owned);
    const range = lease.feedRange ?? { min: "", max: "FF" };
    const worker = new PartitionWorker<T>(
      {
        leaseToken: lease.leaseToken,
        feedRange: range,
        partitionKeyRangeId: lease.version === 0 ? lease.leaseToken : undefined,
        continuationToken: lease.continuationToken,
        checkpoint: async (etag) => {
          // The expected owner is read when the write runs, not when it is queued (a release may come first).
          await this.write(owned, (l) => checkpointAs(owned.expectedOwner, etag)(l));
        },
      },
      this.input.monitoredContainer,
      this.handler,
      this.options.errorPolicy,
      this.startPosition,
      this.options.feedPollDelay,
      this.options.maxItemsPerInvocation,
      this.options.allVersions,
      {
        checkpointed: (token, etag, n) => this.emit("checkpointed", token, etag, n),
        handlerFailed: (token, error) => this.report(error, token),
        deadLettered: (token, n) => this.emit("deadLettered", token, n),
      },
      this.store?.prefix ?? "",
    );
    owned.done = worker.run(abort.signal).then(
      (exit) => this.onWorkerExit(owned, exit),
      (e) => {
        this.report(e, lease.leaseToken);
        this.forget(owned);
      },
    );
    return true;
  }

  private async onWorkerExit(owned: OwnedLease, exit: WorkerExit): Promise<void> {
    const token = owned.lease.leaseToken;
    if (exit.kind === "lost") {
      owned.abort.abort(exit.error);
      this.forget(owned);
      this.emit("lost", token, exit.error.reason);
      return;
    }
    if (exit.kind === "split") {
      try {
        await this.handleSplit(owned);
      } catch (e) {
        this.report(e, token);
        this.forget(owned);
      }
      return;
    }
    this.forget(owned);
  }

  /**
   * Emits "error" when someone listens; otherwise logs, because an unheard "error" event would throw
   * out of a background loop.
   */
  private report(error: unknown, leaseToken: string | undefined): void {
    if (this.listenerCount("error") > 0) this.emit("error", error, leaseToken);
    else
      console.error(`change feed processor ${this.options.instanceName}, lease ${leaseToken ?? "-"}:`, error);
  }

  /** Drops a lease from the owned set unless it was re-acquired meanwhile (a new entry). */
  private forget(owned: OwnedLease): void {
    if (this.owned.get(owned.lease.leaseToken) === owned) this.owned.delete(owned.lease.leaseToken);
  }

  /**
   * The lease's range split, or its partition was merged away (.NET's table, change-feed-leases.md §4.10):
   * after a split, a lease per child range carrying the parent's last checkpoint (version 0 per child
   * partition, or version-1 EPK tiles for an EPK lease); after a merge of a version-0 lease's partition, one
   * version-1 lease of the same EPK range with the same checkpoint. Taken here; the old lease is deleted.
   */
  private async handleSplit(owned: OwnedLease): Promise<void> {
    const store = this.leaseStore;
    const parent = await store.read(owned.lease);
    if (!parent || parent.owner !== this.options.instanceName) {
      this.forget(owned);
      this.emit("lost", owned.lease.leaseToken, "gone");
      return;
    }
    const range = parent.feedRange ?? { min: "", max: "FF" };
    const { resources: all } = await this.input.monitoredContainer.readPartitionKeyRanges().fetchAll();
    const children = all
      .filter(
        (r) =>
          r.minInclusive < range.max &&
          (range.max === "FF" || r.maxExclusive > range.min) &&
          r.maxExclusive > range.min,
      )
      .sort((a, b) => (a.minInclusive < b.minInclusive ? -1 : 1));
    if (children.length === 0) throw new Error(`No partition key range overlaps lease ${parent.leaseToken}.`);
    const merged = parent.version === 0 && children.length === 1;
    if (merged && children[0].id === parent.leaseToken) {
      throw new Error(
        `Lease ${parent.leaseToken} was reported gone but its partition key range still exists.`,
      );
    }
    const created: Lease[] = [];
    for (let i = 0; i < children.length; i++) {
      const r = children[i];
      const child = merged
        ? newLease(
            store.prefix,
            store.layout,
            { min: range.min, max: range.max },
            parent.continuationToken,
            parent.mode,
            parent.properties,
          )
        : parent.version === 0
          ? newLease(
              store.prefix,
              store.layout,
              { id: r.id, min: r.minInclusive, max: r.maxExclusive },
              parent.continuationToken,
              parent.mode,
              parent.properties,
            )
          : newLease(
              store.prefix,
              store.layout,
              {
                min: i === 0 ? range.min : r.minInclusive,
                max: i === children.length - 1 ? range.max : r.maxExclusive,
              },
              parent.continuationToken,
              parent.mode,
              parent.properties,
              parent, // a Java parent's children stay readable by Java hosts
            );
      child.owner = this.options.instanceName;
      const c = await store.create(child);
      if (c) {
        created.push(c);
        this.view?.apply(c);
      }
    }
    await store.delete(parent);
    this.view?.forget(parent);
    // Only now: until the parent is gone, a balancing round must not see it as ours-but-idle and re-take it.
    this.forget(owned);
    if (merged && created.length === 1) this.emit("merged", parent.leaseToken, created[0].leaseToken);
    else
      this.emit(
        "split",
        parent.leaseToken,
        created.map((c) => c.leaseToken),
      );
    for (const c of created) {
      if (this.startLease(c)) this.emit("acquired", c.leaseToken);
    }
  }

  /**
   * Stops every worker and timer without releasing anything: what a crash looks like to the other hosts
   * (their balancers take the leases once they expire). For tests and for hosts that are being torn down hard.
   */
  async abandon(): Promise<void> {
    this.lifecycle.abort();
    for (const o of this.owned.values()) o.abort.abort();
    await Promise.allSettled([...this.loops, ...[...this.owned.values()].map((o) => o.done)]);
    this.owned.clear();
    this.state = "stopped";
  }

  private stopLease(token: string, reason: string): void {
    const owned = this.owned.get(token);
    if (!owned) return;
    owned.abort.abort(new LeaseLostError(token, "stolen"));
    this.owned.delete(token);
    this.emit("lost", token, reason);
  }

  /**
   * Stops: releases every lease (Owner null, continuation kept). With other live hosts and a handoff timeout,
   * each lease is handed to a chosen successor (the survivors end up balanced) and released just before that
   * successor's watch slot, so it is taken within about one slot; until then this host keeps processing it,
   * so the feed does not pause.
   */
  async stop(): Promise<void> {
    if (this.state !== "running") return;
    this.state = "stopping";
    this.lifecycle.abort();
    await Promise.allSettled([...this.loops, this.balancing]);
    const entries = [...this.owned.values()];
    const plan = this.options.handoffTimeout > 0 ? await this.planHandoff(entries) : [];
    if (plan.length === 0) {
      for (const o of entries) o.abort.abort();
      await Promise.all(entries.map((o) => this.release(o, undefined)));
    } else {
      for (const batch of plan) {
        await sleep(batch.at - Date.now(), new AbortController().signal);
        await Promise.all(batch.leases.map((o: OwnedLease) => this.release(o, batch.successor)));
      }
      await this.drainUntilTaken(entries);
    }
    for (const o of entries) o.abort.abort();
    await Promise.allSettled(entries.map((o) => o.done));
    this.owned.clear();
    this.state = "stopped";
  }

  private async release(o: OwnedLease, successor: string | undefined): Promise<void> {
    try {
      await this.write(o, releaseAs(this.options.instanceName, successor), () => {
        o.expectedOwner = null;
      });
      this.emit("released", o.lease.leaseToken);
    } catch (e) {
      o.abort.abort();
      if (!(e instanceof LeaseLostError)) this.report(e, o.lease.leaseToken);
    }
  }

  /**
   * Successors for a stopping host's leases (fewest leases first) and when to release each one's share: just
   * before its next watch slot, by the schedule it follows (this host still counted, as it still owns leases).
   * Empty when no other host is alive. Batches come in release order.
   */
  private async planHandoff(
    entries: OwnedLease[],
  ): Promise<{ successor: string; at: number; leases: OwnedLease[] }[]> {
    const o = this.options;
    const me = o.instanceName;
    await this.leaseView.refresh().catch(() => undefined);
    const now = Date.now();
    const counts = new Map<string, number>();
    for (const l of this.effectiveLeases(now)) {
      if (l.owner !== null && l.owner !== me && !isAvailable(l, now, o.leaseExpirationInterval)) {
        counts.set(l.owner, (counts.get(l.owner) ?? 0) + 1);
      }
    }
    const byId = new Map(entries.map((e) => [e.lease.id, e]));
    const assignment = assignSuccessors(
      entries.map((e) => e.lease),
      counts,
    );
    const schedule = this.watchSchedule(now);
    const lead = Math.min(ChangeFeedDefaults.handoffLead, o.leaseWatchInterval / 4);
    const batches = [...assignment].map(([successor, leases]) => {
      const slot = o.leaseWatchInterval > 0 ? nextSlotStart(schedule, successor, now + lead) : undefined;
      return {
        successor,
        at: slot === undefined ? now : slot - lead,
        leases: leases.map((l) => byId.get(l.id) as OwnedLease),
      };
    });
    return batches.sort((a, b) => a.at - b.at);
  }

  /**
   * Keeps released leases flowing until each is taken by another host, or the handoff timeout passes, or no
   * other live host is left (the others are stopping too: a whole-app shutdown does not wait for the timeout).
   */
  private async drainUntilTaken(entries: OwnedLease[]): Promise<void> {
    const deadline = Date.now() + this.options.handoffTimeout;
    const pending = new Set(entries.filter((e) => !e.abort.signal.aborted));
    const never = new AbortController().signal;
    while (pending.size > 0 && Date.now() < deadline) {
      await sleep(ChangeFeedDefaults.handoffCheckInterval, never);
      await this.leaseView.refresh().catch(() => undefined);
      // Nobody else alive: the participants are this host alone.
      if (this.watchSchedule(Date.now()).participants.length < 2) break;
      for (const e of [...pending]) {
        const current = this.leaseView.get(e.lease.id);
        if (!current || current.owner !== null || e.abort.signal.aborted) {
          e.abort.abort();
          pending.delete(e);
        }
      }
    }
  }
}

/** Creates a processor (the three verbs: start, stop, and the handler you give it). */
export function createChangeFeedProcessor<T = Record<string, unknown>>(
  options: ChangeFeedProcessorOptions & { accountEndpoint?: string },
  handler: ChangeFeedHandler<T>,
): ChangeFeedProcessor<T> {
  return new ChangeFeedProcessor<T>(options, handler);
}

export type { ChangeFeedContext, ChangeFeedHandler } from "./processing/worker.js";
export type { Container };
