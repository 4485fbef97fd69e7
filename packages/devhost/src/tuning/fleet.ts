// The measurement's fleet: an emulator on a free port, the scenario's containers seeded, and one real
// ChangeFeedProcessor per host (each with its own client), counting what it does; and the wait until they balance.
import { type Container, CosmosClient } from "@azure/cosmos";
import { type ChangeFeedProcessor, createChangeFeedProcessor } from "@cosmos-feed/changefeed";
import { createContainerIfNotExists, createDatabaseIfNotExists } from "@cosmos-feed/core/cosmos/ensure";
import { abortableSleep } from "@cosmos-feed/core/cosmos/retry";
import { RANGE_COUNT_HEADER, type RunningEmulator, startEmulator } from "@cosmos-feed/emulator";
import { DATABASE, LEAN_LEASE_CONTAINER, MeasureDefaults } from "./defaults.js";
import type { ScaledIntervals } from "./request.js";
import type { ProgressFn } from "./types.js";

/** A processor of the fleet (documents are plain objects). */
export type Processor = ChangeFeedProcessor<Record<string, unknown>>;

/** What one host's processor did so far, from its events and its handler (counts; `lastChangeAt` in epoch ms). */
export interface HostTally {
  acquired: number;
  released: number;
  lost: number;
  checkpoints: number;
  /** Each lease's first checkpoint (its start position, pinned by its first read). */
  pins: number;
  pages: number;
  documents: number;
  lastChangeAt: number;
}

/** The emulator, the clients made on it and the processors started; `close` stops them all. */
export interface Fleet {
  readonly emu: RunningEmulator;
  /** The processors, one per host, in host order (emptied once they are stopped). */
  readonly processors: Processor[];
  /** A new client of the emulator (its own connections), disposed by `close`. */
  newClient(): CosmosClient;
  /** Abandons the processors still in `processors`, disposes every client and closes the emulator. */
  close(): Promise<void>;
}

/** Starts an emulator on a free port, in memory, without throttling (the measurement must not see 429s). */
export async function openFleet(): Promise<Fleet> {
  const emu = await startEmulator({ port: 0, enforceThroughput: false });
  const clients: CosmosClient[] = [];
  const processors: Processor[] = [];
  return {
    emu,
    processors,
    newClient: () => {
      const c = new CosmosClient({ endpoint: emu.endpoint, key: emu.key });
      clients.push(c);
      return c;
    },
    close: async () => {
      await Promise.allSettled(processors.map((p) => p.abandon()));
      for (const c of clients) c.dispose();
      await emu.close();
    },
  };
}

/**
 * Seeding: the containers (the monitored one with `leases` physical ranges, the app's lean lease container) and
 * MeasureDefaults.seedDocumentsPerLease documents per range.
 */
export async function seedContainers(
  admin: CosmosClient,
  leaseCount: number,
  progress: ProgressFn | undefined,
): Promise<{ monitored: Container; leases: Container }> {
  progress?.("seeding", 0);
  const { database } = await createDatabaseIfNotExists(admin, { id: DATABASE });
  const { container: monitored } = await createContainerIfNotExists(
    database,
    { id: "monitored", partitionKey: { paths: ["/pk"], version: 2 } },
    { initialHeaders: { [RANGE_COUNT_HEADER]: String(leaseCount) } },
  );
  const { container: leases } = await createContainerIfNotExists(
    database,
    { ...LEAN_LEASE_CONTAINER, id: "leases" },
    { initialHeaders: { [RANGE_COUNT_HEADER]: "1" } },
  );
  const seedCount = leaseCount * MeasureDefaults.seedDocumentsPerLease;
  for (let n = 0; n < seedCount; n++) {
    await monitored.items.create({ id: `seed-${n}`, pk: `k${n % MeasureDefaults.writerKeys}`, n });
    if (n % 8 === 0) progress?.("seeding", n / seedCount);
  }
  progress?.("seeding", 1);
  return { monitored, leases };
}

/** The hosts' tallies, and whether their handlers count pages and documents (only in the measuring window). */
export interface Hosts {
  readonly tallies: HostTally[];
  measuring: boolean;
}

/**
 * Creates `hostCount` processors on the fleet's `monitored` and `leases` containers with the scaled intervals (no
 * hand-off on stop), each with its own client, named host-00, host-01 …, and adds them to `fleet.processors`
 * (not started). Their events and handler count into the returned tallies.
 */
export function addHosts(
  fleet: Fleet,
  hostCount: number,
  scaled: ScaledIntervals,
  containers: { monitored: string; leases: string },
): Hosts {
  const hosts: Hosts = { tallies: [], measuring: false };
  const checkpointedTokens = new Set<string>();
  for (let h = 0; h < hostCount; h++) {
    const client = fleet.newClient();
    const tally: HostTally = {
      acquired: 0,
      released: 0,
      lost: 0,
      checkpoints: 0,
      pins: 0,
      pages: 0,
      documents: 0,
      lastChangeAt: Date.now(),
    };
    hosts.tallies.push(tally);
    const p = createChangeFeedProcessor<Record<string, unknown>>(
      {
        monitoredContainer: client.database(DATABASE).container(containers.monitored),
        leaseContainer: client.database(DATABASE).container(containers.leases),
        instanceName: `host-${String(h).padStart(2, "0")}`,
        ...scaled,
        handoffTimeout: 0,
      },
      async (docs) => {
        if (!hosts.measuring) return;
        tally.pages++;
        tally.documents += docs.length;
      },
    );
    p.on("acquired", () => {
      tally.acquired++;
      tally.lastChangeAt = Date.now();
    });
    p.on("released", () => {
      tally.released++;
      tally.lastChangeAt = Date.now();
    });
    p.on("lost", () => {
      tally.lost++;
      tally.lastChangeAt = Date.now();
    });
    p.on("checkpointed", (token) => {
      tally.checkpoints++;
      if (!checkpointedTokens.has(token)) {
        checkpointedTokens.add(token);
        tally.pins++;
      }
    });
    p.on("error", () => {});
    fleet.processors.push(p);
  }
  return hosts;
}

/**
 * Balancing: waits until every one of `leaseCount` leases is owned once, each host has its share (⌊L/H⌋ or ⌈L/H⌉)
 * and no lease changed hands for MeasureDefaults.steadyAcquireIntervals acquire intervals. `startedAt` (epoch ms)
 * is when the phase began. Throws when the hosts' ownership stays unchanged, unbalanced, for
 * MeasureDefaults.balanceTimeoutAcquireIntervals acquire intervals plus one expiration interval (at least
 * balanceTimeoutMinMs): progress, not the time a loaded machine takes, is what it waits on.
 */
export async function waitUntilBalanced(
  processors: Processor[],
  tallies: HostTally[],
  leaseCount: number,
  scaled: ScaledIntervals,
  startedAt: number,
  progress: ProgressFn | undefined,
): Promise<void> {
  const H = processors.length;
  const L = leaseCount;
  const steadyMs = MeasureDefaults.steadyAcquireIntervals * scaled.leaseAcquireInterval;
  const timeoutMs = Math.max(
    MeasureDefaults.balanceTimeoutMinMs,
    MeasureDefaults.balanceTimeoutAcquireIntervals * scaled.leaseAcquireInterval +
      scaled.leaseExpirationInterval,
  );
  const lo = Math.floor(L / H);
  const hi = Math.ceil(L / H);
  let lastSeen = "";
  let progressAt = startedAt;
  for (;;) {
    const tokens = processors.map((p) => p.ownedLeaseTokens());
    const owned = tokens.map((t) => t.length);
    const seen = tokens.map((t) => [...t].sort().join(",")).join(";");
    if (seen !== lastSeen) {
      lastSeen = seen;
      progressAt = Date.now();
    }
    const total = owned.reduce((a, b) => a + b, 0);
    // During a steal the thief owns the lease while the host it was taken from has not noticed yet (until its
    // next write of it): count each lease once, and the double claims apart.
    const distinct = new Set(tokens.flat()).size;
    const balanced = total === L && distinct === L && owned.every((n) => n >= lo && n <= hi);
    const lastChange = Math.max(...tallies.map((x) => x.lastChangeAt));
    const quietFor = Date.now() - lastChange;
    progress?.(
      "balancing",
      balanced ? Math.min(0.99, 0.5 + quietFor / steadyMs / 2) : (0.5 * distinct) / L,
      `${distinct}/${L} leases owned${total > distinct ? `, ${total - distinct} also still claimed by the host it was stolen from` : ""}`,
    );
    if (balanced && quietFor >= steadyMs) break;
    if (Date.now() - progressAt > timeoutMs)
      throw new Error(
        `the ${H} hosts did not balance ${L} leases: no lease changed hands for ${timeoutMs} ms (owned: ${owned.join(", ")})`,
      );
    await abortableSleep(MeasureDefaults.balanceCheckMs);
  }
}
