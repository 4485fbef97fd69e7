import { seededRandom } from "../lib/prng.js";
import {
  type Algorithm,
  dotnetHost,
  leaseDocument,
  ourHost,
  PREFIX,
  type SimHost,
  TIMINGS,
} from "./hosts.js";
import { InMemoryLeaseContainer } from "./lease-container.js";
import { type PartitionKeyRange, SimMonitoredContainer } from "./monitored-container.js";
import { SimClock } from "./sim-clock.js";

/**
 * N simulated hosts of one algorithm over one in-memory lease container, on one simulated clock, with the checks
 * the benchmark reports: from the store's truth (every write as the service applies it), lease moves and steals;
 * at every instant a host starts believing it holds a lease (and when a paused host resumes), double ownership:
 * a lease that two running hosts each believe they hold, unless the other one is the victim of a steal that has
 * not noticed yet (a steal's overlap, counted apart: the victim learns at its next round, renewal or checkpoint).
 */

export interface FleetOptions {
  algorithm: Algorithm;
  leases: number;
  seed: number;
  /** One-way request latency (ms). Default 1–4 ms. */
  latencyMs?: { min: number; max: number };
  /** Probability that a request is lost (never answered). Default 0. */
  lossRate?: number;
}

type HostState = "running" | "stopping" | "paused";

export class Fleet {
  readonly sim = new SimClock();
  readonly random: () => number;
  readonly leases: InMemoryLeaseContainer;
  readonly monitored: SimMonitoredContainer;
  private readonly hosts = new Map<string, { host: SimHost; state: HostState }>();
  private named = 0;
  private bootstrapped = false;
  /** The last non-null owner of each lease id (moves are changes of it). */
  private readonly lastOwner = new Map<string, string>();
  /** The owners a lease was stolen from (taken while their copy was fresh), by lease token. */
  private readonly stolenFrom = new Map<string, Set<string>>();
  private dirty = false;
  private readonly seenDouble = new Set<string>();
  readonly counts = { moves: 0, assignments: 0, steals: 0, doubleOwnership: 0, stealOverlaps: 0, errors: 0 };
  readonly errorSamples: string[] = [];
  /** Simulated host-milliseconds (hosts present × time). */
  hostMs = 0;
  readonly doubleSamples: string[] = [];

  constructor(readonly o: FleetOptions) {
    this.random = seededRandom(o.seed);
    this.leases = new InMemoryLeaseContainer(this.sim, {
      random: this.random,
      latencyMs: o.latencyMs ?? { min: 1, max: 4 },
      lossRate: o.lossRate,
    });
    this.monitored = new SimMonitoredContainer(o.leases, this.leases);
    this.leases.observer = (before, after) => this.observe(before, after);
  }

  private observe(
    before: Record<string, unknown> | undefined,
    after: Record<string, unknown> | undefined,
  ): void {
    if (!after || typeof after.LeaseToken !== "string") return;
    const owner = after.Owner as string | null;
    if (owner === null) return;
    const id = after.id as string;
    const last = this.lastOwner.get(id);
    if (last === owner) return;
    this.lastOwner.set(id, owner);
    if (last === undefined) {
      this.counts.assignments++;
      return;
    }
    this.counts.moves++;
    // Owner again: a steal of it before no longer explains its belief.
    this.stolenFrom.get(after.LeaseToken)?.delete(owner);
    const prev = before?.Owner as string | null | undefined;
    const prevWrittenMs = Date.parse(String(before?.timestamp));
    if (prev && prev !== owner && prevWrittenMs + TIMINGS.expirationMs >= this.sim.now()) {
      this.counts.steals++;
      const victims = this.stolenFrom.get(after.LeaseToken) ?? new Set<string>();
      victims.add(prev);
      this.stolenFrom.set(after.LeaseToken, victims);
    }
  }

  /** Hosts running and not paused (the ones a fair share is computed over). */
  live(): string[] {
    return [...this.hosts].filter(([, h]) => h.state === "running").map(([n]) => n);
  }

  names(): string[] {
    return [...this.hosts.keys()];
  }

  /** Starts `n` new hosts now. */
  add(n: number): string[] {
    const names: string[] = [];
    for (let i = 0; i < n; i++) {
      const name = `host-${String(this.named++).padStart(5, "0")}`;
      const world = {
        sim: this.sim,
        leases: this.leases,
        monitored: this.monitored,
        random: this.random,
        acquired: () => {
          this.dirty = true;
        },
        failed: (_host: string, e: unknown) => {
          this.counts.errors++;
          if (this.errorSamples.length < 5) this.errorSamples.push(`${name}: ${String(e)}`);
        },
      };
      let host: SimHost;
      if (this.o.algorithm === "ours") host = ourHost(world, name);
      else {
        const now = this.sim.now();
        const docs = this.bootstrapped
          ? undefined
          : this.monitored.partitionKeyRanges().map((r) => leaseDocument(r, null, now));
        this.bootstrapped = true;
        host = dotnetHost(world, name, docs);
      }
      this.hosts.set(name, { host, state: "running" });
      names.push(name);
    }
    return names;
  }

  /** Graceful stops (run on the simulated clock; the host leaves once its stop resolves). */
  stop(names: readonly string[]): void {
    for (const n of names) {
      const h = this.hosts.get(n);
      if (!h) continue;
      h.state = "stopping";
      void h.host.stop().finally(() => this.hosts.delete(n));
    }
  }

  /** Crashes: nothing released; the others take the leases once they expire. */
  crash(names: readonly string[]): void {
    for (const n of names) {
      const h = this.hosts.get(n);
      if (!h) continue;
      this.hosts.delete(n);
      void h.host.abandon();
    }
  }

  /** Pauses a host (its timers and answers wait) for `ms`, then resumes it. */
  pause(name: string, ms: number): void {
    const h = this.hosts.get(name);
    if (!h) return;
    h.state = "paused";
    h.host.clock.pause();
    void this.sim.schedule(ms, undefined).then(() => {
      h.host.clock.resume();
      h.state = "running";
      this.dirty = true;
    });
  }

  /** Splits `fraction` of the monitored container's ranges at once; returns how many. */
  split(fraction: number): number {
    const ranges = this.monitored.partitionKeyRanges();
    const n = Math.max(1, Math.round(ranges.length * fraction));
    const ids = [...ranges]
      .map((r) => ({ r, k: this.random() }))
      .sort((a, b) => a.k - b.k)
      .slice(0, n)
      .map((x) => x.r.id);
    const children = this.monitored.split(ids);
    if (this.o.algorithm === "dotnet-model") this.replaceSplitForModel(children);
    return n;
  }

  /**
   * The .NET model reads no feed: each split lease's owner replaces it as .NET does on the 410 (a lease per child,
   * owned by it, created before the parent is deleted).
   */
  private replaceSplitForModel(children: Map<string, PartitionKeyRange[]>): void {
    for (const [token, kids] of children) {
      const id = `${PREFIX}..${token}`;
      const parent = this.leases.get(id);
      const owner = (parent?.Owner as string | null | undefined) ?? null;
      const h = owner ? this.hosts.get(owner) : undefined;
      const container = this.leases.forHost(h?.host.clock ?? this.sim.forHost());
      void (async () => {
        for (const k of kids) {
          await container.items.create(leaseDocument(k, owner, this.sim.now())).catch(() => undefined);
        }
        await container
          .item(id, id)
          .delete()
          .catch(() => undefined);
        h?.host.adoptSplit?.(
          token,
          kids.map((k) => k.id),
        );
      })();
    }
  }

  /** Moves simulated time, checking double ownership at every instant something could have started it. */
  async run(ms: number): Promise<void> {
    this.hostMs += this.hosts.size * ms;
    await this.sim.advance(ms, () => {
      if (this.dirty) this.checkOwnership();
    });
  }

  private checkOwnership(): void {
    this.dirty = false;
    const believers = new Map<string, string[]>();
    for (const [name, h] of this.hosts) {
      if (h.state === "paused") continue;
      for (const t of h.host.believed()) {
        const list = believers.get(t);
        if (list) list.push(name);
        else believers.set(t, [name]);
      }
    }
    for (const [token, names] of believers) {
      if (names.length < 2) continue;
      const doc = this.leases.get(`${PREFIX}..${token}`);
      const owner = doc?.Owner as string | null | undefined;
      for (const n of names) {
        if (n === owner) continue;
        const key = `${token}/${n}/${owner}`;
        if (this.seenDouble.has(key)) continue;
        this.seenDouble.add(key);
        if (this.stolenFrom.get(token)?.has(n)) this.counts.stealOverlaps++;
        else {
          this.counts.doubleOwnership++;
          if (this.doubleSamples.length < 5)
            this.doubleSamples.push(
              `lease ${token}: ${names.join(", ")} (store: ${owner}) at ${this.sim.elapsed()} ms`,
            );
        }
      }
    }
  }

  /** Leases per live host, from the store (an owner that is not live counts as nobody). */
  ownership(): { perHost: Map<string, number>; leases: number; unowned: number } {
    const live = new Set(this.live());
    const perHost = new Map([...live].map((n) => [n, 0]));
    let leases = 0;
    let unowned = 0;
    for (const d of this.leases.documents()) {
      if (typeof d.LeaseToken !== "string") continue;
      leases++;
      const owner = d.Owner as string | null;
      if (owner && live.has(owner)) perHost.set(owner, (perHost.get(owner) ?? 0) + 1);
      else unowned++;
    }
    return { perHost, leases, unowned };
  }

  /** Every lease owned by a live host, and every live host within ±1 of its fair share. */
  balanced(): boolean {
    const { perHost, leases, unowned } = this.ownership();
    if (unowned > 0 || perHost.size === 0 || leases === 0) return false;
    const fair = leases / perHost.size;
    for (const c of perHost.values()) if (Math.abs(c - fair) > 1) return false;
    return true;
  }

  maxPerHost(): number {
    return Math.max(0, ...this.ownership().perHost.values());
  }

  /**
   * Runs until balanced, sampling each simulated second, for at most `maxMs`; the time it took (ms), or undefined.
   * `sample` sees each second (e.g. the most leases any host owns); `ready`: the event has played out (a split's
   * children exist).
   */
  /**
   * Runs, a simulated second at a time, until `quietMs` have passed since the last fleet-signal raise (or since
   * the call, for a fleet that raises none: the .NET model), for at most `maxMs`; the time it took (ms).
   */
  async untilQuiet(quietMs: number, maxMs: number): Promise<number> {
    const raises = () => this.leases.meter.snapshot()["fleet-replace"]?.requests ?? 0;
    const start = this.sim.elapsed();
    let seen = raises();
    let lastAt = start;
    while (this.sim.elapsed() - lastAt < quietMs && this.sim.elapsed() - start < maxMs) {
      await this.run(1_000);
      const now = raises();
      if (now !== seen) {
        seen = now;
        lastAt = this.sim.elapsed();
      }
    }
    return this.sim.elapsed() - start;
  }

  async untilBalanced(
    maxMs: number,
    sample?: () => void,
    ready: () => boolean = () => true,
  ): Promise<number | undefined> {
    const start = this.sim.elapsed();
    while (this.sim.elapsed() - start < maxMs) {
      await this.run(1_000);
      sample?.();
      if (ready() && this.balanced()) return this.sim.elapsed() - start;
    }
    return undefined;
  }
}
