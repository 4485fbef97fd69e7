import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Container } from "@azure/cosmos";
import { createClientLogger } from "@azure/logger";
import { EqualPartitionsBalancingStrategy } from "./balancing/strategy.js";
import { BootstrapAbortedError, Bootstrapper } from "./bootstrapper.js";
import { type Clock, systemClock } from "./clock.js";
import { HandoffPlanner } from "./handoff-planner.js";
import { LeaseReplacer } from "./lease-replacer.js";
import { type Lease, LeaseMode } from "./leases/lease.js";
import { releaseAs } from "./leases/mutations.js";
import { openLeaseStore } from "./leases/open.js";
import { LeaseLostError, LeaseOperationCounters, type LeaseStore } from "./leases/store.js";
import { LeaseView } from "./leases/view.js";
import { LoadBalancer } from "./load-balancer.js";
import { type ChangeFeedProcessorOptions, type ResolvedOptions, resolveOptions } from "./options.js";
import type { StartPosition } from "./processing/feed-reader.js";
import type { ChangeFeedHandler } from "./processing/worker.js";
import { type LeaseClose, LeaseSupervisor } from "./supervisor.js";

const logger = createClientLogger("cosmos-feed:changefeed");

/** Events a processor emits (all carry the lease token). A listener that throws is logged, never rethrown. */
export interface ChangeFeedProcessorEvents {
  acquired: [leaseToken: string];
  released: [leaseToken: string];
  /** Once per loss: stolen, gone, expired (local deadline), container-gone, … */
  lost: [leaseToken: string, reason: string];
  checkpointed: [leaseToken: string, continuationToken: string, documents: number];
  split: [parentToken: string, childTokens: string[]];
  /** A version-0 lease whose partition was merged away became a version-1 (EPK) lease of the same range. */
  merged: [oldToken: string, newToken: string];
  deadLettered: [leaseToken: string, documents: number];
  error: [error: unknown, leaseToken: string | undefined];
}

/** Construction options: the public ones, plus the clock (tests inject a FakeClock). */
export type ProcessorInput = ChangeFeedProcessorOptions & { accountEndpoint?: string; clock?: Clock };

/** Options of {@link ChangeFeedProcessor.stop}. */
export interface StopOptions {
  /** Ends the hand-off wait early: every lease still held is released at once. */
  abortSignal?: AbortSignal;
}

interface Running {
  store: LeaseStore;
  view: LeaseView;
  balancer: LoadBalancer;
  loops: Promise<void>[];
}

/**
 * A change feed processor whose lease container is interchangeable with the .NET one's (and the Azure
 * Functions trigger's). The facade: it wires the roles (Bootstrapper, LoadBalancer, one LeaseSupervisor per
 * owned lease with its worker and LeaseRenewer, LeaseReplacer, HandoffPlanner) and emits their events.
 */
export class ChangeFeedProcessor<
  T = Record<string, unknown>,
> extends EventEmitter<ChangeFeedProcessorEvents> {
  readonly counters = new LeaseOperationCounters();
  private readonly options: ResolvedOptions;
  private readonly clock: Clock;
  private readonly supervisors = new Map<string, LeaseSupervisor<T>>();
  /** Leases of a monitored container that is gone: not taken again by this host. */
  private readonly excluded = new Set<string>();
  private lifecycle = new AbortController();
  /** Fired by abandon(): cuts a stop's hand-off short. */
  private hardStop = new AbortController();
  private starting: Promise<void> = Promise.resolve();
  private running: Running | undefined;
  private startPosition: StartPosition = { kind: "now" };
  private state: "stopped" | "starting" | "running" | "stopping" = "stopped";

  constructor(
    private readonly input: ProcessorInput,
    private readonly handler: ChangeFeedHandler<T>,
  ) {
    super();
    this.options = resolveOptions(input, randomUUID);
    this.clock = input.clock ?? systemClock;
  }

  get instanceName(): string {
    return this.options.instanceName;
  }

  /** Lease tokens this host currently processes. */
  ownedLeaseTokens(): string[] {
    return [...this.supervisors.values()]
      .filter((s) => s.expectedOwner !== null && !s.closeReason)
      .map((s) => s.leaseToken);
  }

  get leaseStore(): LeaseStore {
    if (!this.running) throw new Error("The processor has not been started.");
    return this.running.store;
  }

  /** Starts; a stop() before it finishes makes it resolve with the processor stopped. */
  async start(): Promise<void> {
    if (this.state !== "stopped") throw new Error(`Cannot start a processor that is ${this.state}.`);
    this.state = "starting";
    const lifecycle = new AbortController();
    this.lifecycle = lifecycle;
    this.hardStop = new AbortController();
    const run = (async () => {
      try {
        await this.startUp(lifecycle.signal);
        this.state = "running";
      } catch (e) {
        this.state = "stopped";
        lifecycle.abort();
        // Stopped while bootstrapping: the caller asked for it, not an error.
        if (!(e instanceof BootstrapAbortedError)) throw e;
      }
    })();
    this.starting = run.catch(() => undefined);
    await run;
  }

  private async startUp(signal: AbortSignal): Promise<void> {
    const o = this.options;
    const monitored = this.input.monitoredContainer;
    const store = await openLeaseStore(
      monitored,
      this.input.leaseContainer,
      o.prefix,
      this.counters,
      this.input.accountEndpoint,
    );
    const mode = o.allVersions ? LeaseMode.AllVersionsAndDeletes : LeaseMode.LatestVersion;
    await new Bootstrapper({
      store,
      monitored,
      mode,
      clock: this.clock,
      retryDelay: o.leaseAcquireInterval,
    }).run(signal);
    this.startPosition = o.startFromBeginning
      ? { kind: "beginning" }
      : o.startFromTime
        ? { kind: "time", time: o.startFromTime }
        : // As .NET >= 3.59: "now" is pinned to the start time (less 1 s), so a restart does not skip changes.
          { kind: "time", time: new Date(this.clock.now() - 1000) };
    const view = new LeaseView(store);
    await view.load();
    const balancer = new LoadBalancer({
      options: o,
      strategy:
        this.input.balancingStrategy ?? new EqualPartitionsBalancingStrategy(o.leaseExpirationInterval),
      store,
      view,
      monitored,
      clock: this.clock,
      running: this.supervisors,
      takeOver: (lease, sentAt) => this.supervise(lease, sentAt),
      stolen: (token) => this.supervisors.get(token)?.close("stolen"),
      excluded: this.excluded,
      report: (e, token) => this.report(e, token),
      signal,
    });
    this.running = { store, view, balancer, loops: [] };
    await balancer.balance();
    this.running.loops = [
      // The watch: this host's slots of the lease feed; a release seen there is balanced at once, so a
      // stopping host's successor takes over within a slot (see balancing/watch-schedule.ts).
      this.loop(
        signal,
        (now) => balancer.nextWatchAt(now) - now,
        async () => {
          const changed = await view.refresh();
          if (changed.some((l) => l.owner === null)) await balancer.balance();
        },
      ),
      this.loop(
        signal,
        () => o.leaseAcquireInterval,
        () => balancer.balance(),
      ),
    ];
  }

  /** Runs `tick` after each wait of `delayMs(now)` until `signal`; a failed tick is reported. */
  private async loop(signal: AbortSignal, delayMs: (nowMs: number) => number, tick: () => Promise<void>) {
    while (!signal.aborted) {
      await this.clock.sleep(delayMs(this.clock.now()), signal);
      if (signal.aborted) break;
      await tick().catch((e: unknown) => this.report(e, undefined));
    }
  }

  /** Starts a supervisor for a lease just acquired or created here, unless one already runs for it. */
  private supervise(lease: Lease, sentAt: number): void {
    const r = this.running;
    // A split's children are created owned by this host before they are started here, so a balancing round in
    // between takes them too; a second worker would orphan the first (both deliver every change).
    if (!r || this.supervisors.has(lease.leaseToken)) return;
    const s = new LeaseSupervisor<T>({
      lease,
      acquireSentAt: sentAt,
      me: this.options.instanceName,
      store: r.store,
      monitored: this.input.monitoredContainer,
      handler: this.handler,
      options: this.options,
      startPosition: this.startPosition,
      clock: this.clock,
      workerEvents: {
        checkpointed: (token, etag, n) => this.fire("checkpointed", token, etag, n),
        handlerFailed: (token, error) => this.report(error, token),
        readFailed: (token, error) => this.report(error, token),
        deadLettered: (token, n) => this.fire("deadLettered", token, n),
      },
      written: (l) => r.view.apply(l),
      renewFailed: (token, error) => this.report(error, token),
    });
    this.supervisors.set(lease.leaseToken, s);
    this.fire("acquired", lease.leaseToken);
    s.done
      .then((close) => this.closed(s, close, r))
      .catch((e: unknown) => this.report(e, s.leaseToken))
      .finally(() => this.forget(s));
  }

  /** What a closed lease means: report it, and replace a split lease. */
  private async closed(s: LeaseSupervisor<T>, close: LeaseClose, r: Running): Promise<void> {
    const token = s.leaseToken;
    switch (close.reason) {
      case "released":
      case "stopped":
        return;
      case "handler-failure":
        this.report(close.error, token);
        return;
      case "container-gone":
        this.excluded.add(token);
        this.report(close.error, token);
        this.fire("lost", token, close.reason);
        // As .NET: give the lease up, so whoever can still read the container may take it.
        await s.write(releaseAs(this.options.instanceName)).catch(() => undefined);
        return;
      case "split": {
        const replacer = new LeaseReplacer({
          store: r.store,
          monitored: this.input.monitoredContainer,
          me: this.options.instanceName,
          created: (l) => r.view.apply(l),
          deleted: (l) => r.view.forget(l),
        });
        const sentAt = this.clock.monotonicNow();
        const done = await replacer.replace(s.lease);
        // Only now: until the parent is gone, a balancing round must not see it as ours-but-idle and re-take it.
        this.forget(s);
        if (done.kind === "lost") return this.fire("lost", token, "gone");
        if (done.kind === "merged") this.fire("merged", token, done.successor.leaseToken);
        else
          this.fire(
            "split",
            token,
            done.children.map((c) => c.leaseToken),
          );
        for (const c of done.kind === "merged" ? [done.successor] : done.children) this.supervise(c, sentAt);
        return;
      }
      default:
        this.fire("lost", token, close.reason);
    }
  }

  /** Drops a supervisor unless another one runs for its lease now. */
  private forget(s: LeaseSupervisor<T>): void {
    if (this.supervisors.get(s.leaseToken) === s) this.supervisors.delete(s.leaseToken);
  }

  /** Emits an event; a listener that throws is reported (or logged), never thrown into a background task. */
  private fire<K extends keyof ChangeFeedProcessorEvents>(
    event: K,
    ...args: ChangeFeedProcessorEvents[K]
  ): void {
    try {
      (this.emit as (e: K, ...a: ChangeFeedProcessorEvents[K]) => boolean)(event, ...args);
    } catch (e) {
      if (event === "error") logger.error(`An 'error' listener of ${this.options.instanceName} threw:`, e);
      else this.report(e, typeof args[0] === "string" ? args[0] : undefined);
    }
  }

  /** Emits "error" when someone listens; otherwise logs (an unheard "error" event would throw). */
  private report(error: unknown, leaseToken: string | undefined): void {
    if (this.listenerCount("error") > 0) this.fire("error", error, leaseToken);
    else logger.error(`Processor ${this.options.instanceName}, lease ${leaseToken ?? "-"}:`, error);
  }

  /**
   * Stops every worker and timer without releasing anything: what a crash looks like to the other hosts
   * (their balancers take the leases once they expire). For tests and for hosts that are being torn down hard.
   */
  async abandon(): Promise<void> {
    this.hardStop.abort();
    this.lifecycle.abort();
    await this.starting;
    const sups = [...this.supervisors.values()];
    for (const s of sups) s.close("stopped");
    await Promise.allSettled([...(this.running?.loops ?? []), ...sups.map((s) => s.done)]);
    this.supervisors.clear();
    this.state = "stopped";
  }

  /**
   * Stops: releases every lease (Owner null, continuation kept). With other live hosts and a handoff timeout,
   * each lease is handed to a chosen successor and released just before that successor's watch slot, and this
   * host keeps processing it until it is taken, so the feed does not pause. Stopping a processor that is still
   * starting stops it as soon as the start is over (or interrupts its bootstrap wait).
   */
  async stop(options: StopOptions = {}): Promise<void> {
    if (this.state === "starting") {
      this.lifecycle.abort();
      await this.starting;
    }
    const r = this.running;
    if (this.state !== "running" || !r) return;
    this.state = "stopping";
    this.lifecycle.abort();
    await Promise.allSettled([...r.loops, r.balancer.idle()]);
    const cut = AbortSignal.any([
      this.hardStop.signal,
      ...(options.abortSignal ? [options.abortSignal] : []),
    ]);
    const planner = new HandoffPlanner({
      options: this.options,
      view: r.view,
      balancer: r.balancer,
      clock: this.clock,
    });
    const entries = [...this.supervisors.values()].filter((s) => !s.closeReason);
    const plan = this.options.handoffTimeout > 0 && !cut.aborted ? await planner.plan(entries) : [];
    const releasing: Promise<void>[] = [];
    for (const batch of plan) {
      if (!(await planner.waitFor(batch, cut))) break;
      releasing.push(...batch.leases.map((s) => this.release(s, batch.successor)));
    }
    await Promise.all(releasing);
    if (plan.length > 0) await planner.drainUntilTaken(entries, (s) => s.close("released"), cut);
    for (const s of entries) s.close("released");
    await Promise.all(entries.filter((s) => s.expectedOwner !== null).map((s) => this.release(s, undefined)));
    await Promise.allSettled(entries.map((s) => s.done));
    this.supervisors.clear();
    this.state = "stopped";
  }

  private async release(s: LeaseSupervisor<T>, successor: string | undefined): Promise<void> {
    try {
      await s.write(releaseAs(this.options.instanceName, successor), () => s.released());
      this.fire("released", s.leaseToken);
    } catch (e) {
      s.close("released");
      s.released();
      if (!(e instanceof LeaseLostError)) this.report(e, s.leaseToken);
    }
  }
}

/** Creates a processor (the three verbs: start, stop, and the handler you give it). */
export function createChangeFeedProcessor<T = Record<string, unknown>>(
  options: ProcessorInput,
  handler: ChangeFeedHandler<T>,
): ChangeFeedProcessor<T> {
  return new ChangeFeedProcessor<T>(options, handler);
}

export type { ChangeFeedContext, ChangeFeedHandler } from "./processing/worker.js";
export type { Container };
