import {
  type ChangeFeedProcessor,
  createChangeFeedProcessor,
  databaseRidOf,
  FairShareBalancingStrategy,
  type Lease,
  LeaseMode,
  leasePrefix,
  toLeaseDocument,
} from "@cosmos-feed/changefeed";
import { DotnetModelHost } from "./dotnet-model.js";
import type { InMemoryLeaseContainer } from "./lease-container.js";
import { MONITORED_RID, type SimMonitoredContainer } from "./monitored-container.js";
import type { HostClock, SimClock } from "./sim-clock.js";

/** The processor's timings in the simulation: the defaults (ChangeFeedDefaults), as a deployment runs them. */
export const TIMINGS = { renewMs: 17_000, acquireMs: 13_000, expirationMs: 60_000, pollMs: 5_000 } as const;

/** The account endpoint every simulated host names (it goes into the lease prefix). */
const ENDPOINT = "https://fleet-sim.documents.azure.com/";
export const PREFIX = leasePrefix("", ENDPOINT, databaseRidOf(MONITORED_RID), MONITORED_RID);

/** Which implementation a fleet runs: ours (the real processor) or the .NET model. */
export type Algorithm = "ours" | "dotnet-model";

/** One simulated host, either implementation. */
export interface SimHost {
  readonly name: string;
  readonly clock: HostClock;
  /** Lease tokens this host believes it holds (processes) now. */
  believed(): string[];
  stop(): Promise<void>;
  abandon(): Promise<void>;
  /** The .NET model only: this host replaced a split lease by its children (it holds them now). */
  adoptSplit?(parentToken: string, childTokens: string[]): void;
}

export interface HostWorld {
  sim: SimClock;
  leases: InMemoryLeaseContainer;
  monitored: SimMonitoredContainer;
  random: () => number;
  /** Called when a host starts believing it holds a lease (the driver checks ownership then). */
  acquired: (host: string, token: string) => void;
  /** An error a host reported (counted; none is expected). */
  failed: (host: string, error: unknown) => void;
}

export function ourHost(world: HostWorld, name: string): SimHost {
  const clock = world.sim.forHost();
  const processor: ChangeFeedProcessor = createChangeFeedProcessor(
    {
      monitoredContainer: world.monitored.forHost(clock),
      leaseContainer: world.leases.forHost(clock),
      accountEndpoint: ENDPOINT,
      instanceName: name,
      clock,
      leaseRenewInterval: TIMINGS.renewMs,
      leaseAcquireInterval: TIMINGS.acquireMs,
      leaseExpirationInterval: TIMINGS.expirationMs,
      feedPollDelay: TIMINGS.pollMs,
      balancingStrategy: new FairShareBalancingStrategy(TIMINGS.expirationMs, world.random),
    },
    async () => {},
  );
  processor.on("acquired", (token) => world.acquired(name, token));
  processor.on("error", (e) => world.failed(name, e));
  // A start that fails (a bootstrap request lost past requestTimeout) is retried, as a host's supervisor would.
  let ended = false;
  const begin = (): void => {
    processor.start().catch((e: unknown) => {
      world.failed(name, e);
      if (!ended) void clock.sleep(TIMINGS.acquireMs).then(() => !ended && begin());
    });
  };
  begin();
  return {
    name,
    clock,
    believed: () => processor.ownedLeaseTokens(),
    stop: () => {
      ended = true;
      return processor.stop();
    },
    abandon: () => {
      ended = true;
      return processor.abandon();
    },
  };
}

export function dotnetHost(world: HostWorld, name: string, bootstrap?: Record<string, unknown>[]): SimHost {
  const clock = world.sim.forHost();
  const host = new DotnetModelHost({
    name,
    container: world.leases.forHost(clock),
    clock,
    prefix: PREFIX,
    renewMs: TIMINGS.renewMs,
    acquireMs: TIMINGS.acquireMs,
    expirationMs: TIMINGS.expirationMs,
    acquired: (id) => world.acquired(name, tokenOf(id)),
    bootstrap,
  });
  host.start();
  return {
    name,
    clock,
    believed: () => host.ownedLeaseIds().map(tokenOf),
    stop: () => host.stop(),
    abandon: () => host.abandon(),
    adoptSplit: (parent, children) =>
      host.replaced(
        `${PREFIX}..${parent}`,
        children.map((c) => `${PREFIX}..${c}`),
      ),
  };
}

export const tokenOf = (id: string) => id.slice(PREFIX.length + 2);

/** A lease document as the bootstrap writes it, for the monitored container's range. */
export function leaseDocument(
  range: { id: string; minInclusive: string; maxExclusive: string },
  owner: string | null,
  nowMs: number,
) {
  const id = `${PREFIX}..${range.id}`;
  const lease: Lease = {
    id,
    partitionKeyValue: id,
    hasPartitionKeyProperty: false,
    version: 0,
    leaseToken: range.id,
    feedRange: { min: range.minInclusive, max: range.maxExclusive },
    owner,
    continuationToken: null,
    properties: {},
    timestampMs: nowMs,
    mode: LeaseMode.LatestVersion,
    etag: "",
  };
  return toLeaseDocument(lease, nowMs) as unknown as Record<string, unknown>;
}
