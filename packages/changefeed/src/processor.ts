import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Container } from "@azure/cosmos";
import { type Clock, systemClock } from "@cosmos-feed/core/clock";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { FairShareBalancingStrategy } from "./balancing/fair-share.js";
import { FleetSignal } from "./balancing/fleet-signal.js";
import { BootstrapAbortedError, Bootstrapper } from "./bootstrapper.js";
import { abandonedBy, boundedRequest } from "./bounded-request.js";
import { type ChangeFeedProcessorEvents, ProcessorEvents } from "./events.js";
import { HandoffPlanner } from "./handoff-planner.js";
import { LeaseWatch, WatchSlots } from "./lease-watch.js";
import { LeaseMode } from "./leases/lease.js";
import { openLeaseStore } from "./leases/open.js";
import { LeaseOperationCounters, type LeaseStore } from "./leases/store.js";
import { LeaseView } from "./leases/view.js";
import { releaseLeftovers } from "./leftover-release.js";
import { LoadBalancer } from "./load-balancer.js";
import { type ChangeFeedProcessorOptions, type ResolvedOptions, resolveOptions } from "./options.js";
import { OwnedLeases } from "./owned-leases.js";
import type { StartPosition } from "./processing/feed-reader.js";
import { FeedPollWakeup } from "./processing/wakeup.js";
import type { ChangeFeedHandler } from "./processing/worker.js";

export type { ChangeFeedProcessorEvents };

/** Construction options: the public ones, plus the clock (tests inject a FakeClock). */
export type ProcessorInput = ChangeFeedProcessorOptions & { clock?: Clock };

/** Options of {@link ChangeFeedProcessor.stop}. */
export interface StopOptions {
  /** Ends the hand-off wait early: every lease still held is released at once. */
  abortSignal?: AbortSignal;
}

interface Running<T> {
  store: LeaseStore;
  view: LeaseView;
  balancer: LoadBalancer;
  slots: WatchSlots;
  owned: OwnedLeases<T>;
  loops: Promise<void>[];
}

/**
 * A change feed processor whose lease container is interchangeable with the .NET one's (and the Azure
 * Functions trigger's). The facade: it wires the roles (Bootstrapper, LoadBalancer, LeaseWatch and the WatchSlots
 * both use, one LeaseSupervisor per owned lease with its worker and LeaseRenewer, LeaseReplacer, HandoffPlanner)
 * and emits their events.
 */
export class ChangeFeedProcessor<
  T = Record<string, unknown>,
> extends EventEmitter<ChangeFeedProcessorEvents> {
  /** Requests this processor made to the lease container, and their cost (RU). */
  readonly counters = new LeaseOperationCounters();
  private readonly options: ResolvedOptions;
  private readonly clock: Clock;
  private readonly events: ProcessorEvents;
  private lifecycle = new AbortController();
  /** Fired by abandon(): cuts a stop's hand-off short. */
  private hardStop = new AbortController();
  private starting: Promise<void> = Promise.resolve();
  private running: Running<T> | undefined;
  private startPosition: StartPosition = { kind: "now" };
  private state: "stopped" | "starting" | "running" | "stopping" = "stopped";
  private readonly wakeup = new FeedPollWakeup();

  constructor(
    private readonly input: ProcessorInput,
    private readonly handler: ChangeFeedHandler<T>,
  ) {
    super();
    this.options = resolveOptions(input, randomUUID);
    this.clock = input.clock ?? systemClock;
    this.events = new ProcessorEvents(this, this.options.instanceName);
  }

  /** This host's name, stored as the Owner of the leases it takes. */
  get instanceName(): string {
    return this.options.instanceName;
  }

  /**
   * Reads the feed now on every lease this host processes, instead of after the rest of `feedPollDelay`: for a
   * process that has just written to the monitored container and wants its own change seen at once.
   */
  wake(): void {
    this.wakeup.wake();
  }

  /** Lease tokens this host currently processes. */
  ownedLeaseTokens(): string[] {
    return this.running?.owned.tokens() ?? [];
  }

  /** The lease store of the running processor; throws a CosmosFeedError (code "ProcessorNotStarted") before start(). */
  get leaseStore(): LeaseStore {
    if (!this.running) {
      throw new CosmosFeedError("The processor has not been started.", { code: "ProcessorNotStarted" });
    }
    return this.running.store;
  }

  /**
   * Starts; a stop() before it finishes makes it resolve with the processor stopped. Rejects with a
   * CosmosFeedError (code "ProcessorNotStopped") unless the processor is stopped.
   */
  async start(): Promise<void> {
    if (this.state !== "stopped") {
      throw new CosmosFeedError(`Cannot start a processor that is ${this.state}.`, {
        code: "ProcessorNotStopped",
      });
    }
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
        // Stopped while bootstrapping (or opening the lease store): the caller asked for it, not an error.
        const stopped = abandonedBy(lifecycle.signal, e);
        if (!(e instanceof BootstrapAbortedError) && !stopped) throw e;
      }
    })();
    this.starting = run.catch(() => undefined);
    await run;
  }

  private async startUp(signal: AbortSignal): Promise<void> {
    const o = this.options;
    const monitored = this.input.monitoredContainer;
    // Bounded, as every request: opening reads both containers' definitions (no signal: a late answer is dropped).
    const opening = openLeaseStore({
      monitored,
      leaseContainer: this.input.leaseContainer,
      processorName: o.prefix,
      counters: this.counters,
      accountEndpoint: this.input.accountEndpoint,
      now: () => this.clock.now(),
      // The 412 backoff waits on the processor's clock too (a fake or simulated clock controls it).
      sleep: (ms, s) => this.clock.sleep(ms, s),
      requireTtl: this.input.checkLeaseContainerTtl ?? true,
    });
    opening.catch(() => undefined); // rejected after a give-up: dropped, never unhandled
    const store = await boundedRequest(
      this.clock,
      o.requestTimeout,
      signal,
      "container reads",
      () => opening,
    );
    const mode = o.allVersions ? LeaseMode.AllVersionsAndDeletes : LeaseMode.LatestVersion;
    await new Bootstrapper({
      store,
      monitored,
      mode,
      clock: this.clock,
      // Hosts waiting on another's bootstrap check every leaseJoinSettleDelay: they then join its fleet within
      // seconds of the leases existing, not a round later.
      retryDelay: o.leaseJoinSettleDelay,
      requestTimeout: o.requestTimeout,
    }).run(signal);
    this.startPosition = o.startFromBeginning
      ? { kind: "beginning" }
      : o.startFromTime
        ? { kind: "time", time: o.startFromTime }
        : // As .NET >= 3.59: "now" is pinned to the start time (less 1 s), so a restart does not skip changes.
          { kind: "time", time: new Date(this.clock.now() - 1000) };
    const fleet = new FleetSignal({
      store,
      clock: this.clock,
      me: o.instanceName,
      requestTimeout: o.requestTimeout,
      signal,
      report: (e) => this.events.report(e, undefined),
    });
    // Looked at before the listing, so that a change signalled after it is noticed at the first round.
    await fleet.look();
    const view = new LeaseView(store, () => this.clock.now());
    await boundedRequest(this.clock, o.requestTimeout, signal, "lease listing", () => view.load());
    const slots = new WatchSlots({ options: o, view, clock: this.clock, fleet });
    const owned: OwnedLeases<T> = new OwnedLeases<T>({
      options: o,
      store,
      view,
      monitored,
      handler: this.handler,
      startPosition: this.startPosition,
      clock: this.clock,
      events: this.events,
      wakeup: this.wakeup,
      signal,
      changed: (): Promise<void> => slots.raiseFleetSignal(),
    });
    const balancer = new LoadBalancer({
      options: o,
      strategy: this.input.balancingStrategy ?? new FairShareBalancingStrategy(o.leaseExpirationInterval),
      store,
      view,
      monitored,
      clock: this.clock,
      slots,
      running: owned.byToken,
      takeOver: (lease, sentAt) => owned.supervise(lease, sentAt),
      stolen: (token) => owned.byToken.get(token)?.close("stolen"),
      excluded: owned.excluded,
      report: (e, token) => this.events.report(e, token),
      signal,
    });
    const watch = new LeaseWatch({ options: o, view, clock: this.clock, slots, rounds: balancer });
    this.running = { store, view, balancer, slots, owned, loops: [] };
    await balancer.balance();
    this.running.loops = [
      // The watch: this host's slots of the lease feed; a release seen there is balanced at once, so a
      // stopping host's successor takes over within a slot (see balancing/watch-schedule.ts).
      this.loop(
        signal,
        (s) => watch.untilNextSlot(s),
        () => watch.watchTick(),
      ),
      // A round that refreshed the view (on a fleet signal) may have changed the watch's participants: the
      // watch then plans its slot again.
      this.loop(
        signal,
        (s) => this.clock.sleep(balancer.nextRoundDelay(), s).then(() => true),
        () => balancer.timedRound().finally(() => watch.replan()),
      ),
    ];
  }

  /**
   * Runs `tick` each time `wait` resolves true (false: wait again) until `signal`; a failed tick is reported.
   */
  private async loop(
    signal: AbortSignal,
    wait: (signal: AbortSignal) => Promise<boolean>,
    tick: () => Promise<void>,
  ) {
    while (!signal.aborted) {
      const due = await wait(signal);
      if (signal.aborted) break;
      if (!due) continue;
      await tick().catch((e: unknown) => {
        // A request given up because the processor stops is not a failure.
        if (abandonedBy(signal, e)) return;
        this.events.report(e, undefined);
      });
    }
  }

  /**
   * Stops every worker and timer without releasing anything: what a crash looks like to the other hosts
   * (their balancers take the leases once they expire). For tests and for hosts that are being torn down hard.
   */
  async abandon(): Promise<void> {
    this.hardStop.abort();
    this.lifecycle.abort();
    await this.starting;
    await Promise.allSettled([...(this.running?.loops ?? []), this.running?.owned.closeAll()]);
    this.state = "stopped";
  }

  /**
   * Stops: releases every lease (Owner null, continuation kept). With other live hosts and a handoff timeout,
   * each lease is handed to a chosen successor and released just before that successor's watch slot, and this
   * host keeps processing it until it is taken, so the feed does not pause. Last, any lease the view still shows
   * as this host's (closed on its local deadline, or its release failed) is released too. Stopping a processor
   * that is still starting stops it as soon as the start is over (or interrupts its bootstrap wait).
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
    const entries = r.owned.active();
    if (this.options.handoffTimeout > 0 && !cut.aborted) {
      const planner = new HandoffPlanner({
        options: this.options,
        view: r.view,
        balancer: r.balancer,
        slots: r.slots,
        clock: this.clock,
      });
      await planner.handOff(
        entries,
        (s, successor) => r.owned.release(s, successor),
        cut,
        () => r.slots.raiseFleetSignal(cut),
      );
    }
    for (const s of entries) s.close("released");
    await Promise.all(
      entries.filter((s) => s.expectedOwner !== null).map((s) => r.owned.release(s, undefined)),
    );
    await Promise.allSettled(entries.map((s) => s.done));
    await r.owned.closeAll();
    await releaseLeftovers({
      store: r.store,
      view: r.view,
      me: this.options.instanceName,
      clock: this.clock,
      retryInterval: this.options.leaseRenewInterval,
      giveUpAfter: this.options.leaseExpirationInterval,
      requestTimeout: this.options.requestTimeout,
      released: (token) => this.events.fire("released", token),
      report: (e, token) => this.events.report(e, token),
      signal: this.hardStop.signal,
    });
    this.state = "stopped";
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
