import { Agent } from "node:https";
import type { LookupFunction } from "node:net";
import { type Container, CosmosClient } from "@azure/cosmos";
import { type ChangeFeedProcessor, createChangeFeedProcessor } from "@cosmos-feed/changefeed";
import { type EmulatorOptions, type RunningEmulator, startEmulator } from "@cosmos-feed/emulator";
import type { DotnetClient } from "./dotnet.js";
import { selfSignedCertificate } from "./tls.js";

/**
 * The emulator over HTTPS (a throw-away self-signed certificate, as the .NET SDK talks to the service), Node
 * clients of it, our processor hosts, and what both fleets write into one lease container.
 */

export interface TlsEmulator {
  emulator: RunningEmulator;
  /** A Node client; `host` names the account as an Azure endpoint would (connections still go to the emulator). */
  client(host?: string): CosmosClient;
  /** The same for the .NET harness. */
  dotnet(host?: string): DotnetClient;
  close(): Promise<void>;
}

export async function startTlsEmulator(options: EmulatorOptions = {}): Promise<TlsEmulator> {
  const certificate = selfSignedCertificate("interop-tls");
  const emulator = await startEmulator({
    // The Azure-shaped account names the clients use (lease-ids.test.ts) pass the emulator's Host guard.
    allowedHosts: "*.documents.azure.com",
    ...options,
    port: 0,
    tls: { certFile: certificate.certFile, keyFile: certificate.keyFile },
  });
  const clients: CosmosClient[] = [];
  const endpointFor = (host?: string) => (host ? `https://${host}:${emulator.port}/` : emulator.endpoint);
  // Every name resolves to the emulator, as a DNS entry for the account would.
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: "127.0.0.1", family: 4 },
      ]);
    else callback(null, "127.0.0.1", 4);
  };
  return {
    emulator,
    client: (host) => {
      const c = new CosmosClient({
        endpoint: endpointFor(host),
        key: emulator.key,
        agent: new Agent({ rejectUnauthorized: false, keepAlive: true, lookup }),
      });
      clients.push(c);
      return c;
    },
    dotnet: (host) => ({
      endpoint: endpointFor(host),
      key: emulator.key,
      ...(host ? { connectTo: `127.0.0.1:${emulator.port}` } : {}),
    }),
    close: async () => {
      for (const c of clients) c.dispose();
      await emulator.close();
      certificate.remove();
    },
  };
}

/** The intervals both fleets run with in these tests (ms): short, so that balancing and expiry happen in seconds. */
export const TEST_INTERVALS = {
  feedPollDelay: 100,
  leaseAcquireInterval: 500,
  leaseExpirationInterval: 3_000,
  leaseRenewInterval: 1_000,
};

/** One delivered change, from either fleet. */
export interface Delivery {
  host: string;
  lease: string;
  id: string;
  lsn: number;
  op?: string;
}

interface Changed {
  id: string;
  _lsn?: number;
  current?: { id: string; _lsn?: number };
  previous?: { id: string };
  metadata?: { operationType: string; lsn: number; id?: string };
}

/** One of our processor hosts, in this process; records what it delivers as the .NET hosts report theirs. */
export class NodeProcessorHost {
  readonly deliveries: Delivery[] = [];
  readonly errors: string[] = [];
  /** Leases this host took (each may re-deliver the batch that was in flight when it moved). */
  acquisitions = 0;
  /** Documents handed to the handler. */
  delivered = 0;
  /** When the first and the latest batch reached the handler (Date.now()). */
  firstBatchAt = 0;
  lastBatchAt = 0;
  readonly processor: ChangeFeedProcessor<Changed>;

  constructor(
    readonly name: string,
    monitored: Container,
    leases: Container,
    options: {
      processorName: string;
      mode?: "latestVersion" | "allVersionsAndDeletes";
      startFromBeginning?: boolean;
      maxItems?: number;
      /** Instead of TEST_INTERVALS (the bench runs Microsoft's defaults ÷ a scale). */
      intervals?: Partial<typeof TEST_INTERVALS> & {
        leaseWatchInterval?: number;
        maxCheckpointDelay?: number;
      };
      /** Count documents instead of keeping each delivery (the bench). */
      countOnly?: boolean;
    },
  ) {
    this.processor = createChangeFeedProcessor<Changed>(
      {
        monitoredContainer: monitored,
        leaseContainer: leases,
        leaseContainerPrefix: options.processorName,
        instanceName: name,
        mode: options.mode,
        startFromBeginning: options.startFromBeginning,
        maxItemsPerInvocation: options.maxItems,
        ...TEST_INTERVALS,
        leaseWatchInterval: 250,
        // One checkpoint per batch, as .NET: a re-delivery after a takeover is at most the batch in flight.
        maxCheckpointDelay: 0,
        ...options.intervals,
      },
      async (docs, ctx) => {
        this.delivered += docs.length;
        this.lastBatchAt = Date.now();
        if (this.firstBatchAt === 0) this.firstBatchAt = this.lastBatchAt;
        if (options.countOnly) return;
        for (const d of docs) {
          const meta = d.metadata;
          this.deliveries.push(
            meta
              ? {
                  host: name,
                  lease: ctx.leaseToken,
                  id: (d.current?.id ?? d.previous?.id ?? meta.id) as string,
                  lsn: meta.lsn,
                  op: meta.operationType,
                }
              : { host: name, lease: ctx.leaseToken, id: d.id, lsn: d._lsn as number },
          );
        }
      },
    );
    this.processor.on("acquired", () => {
      this.acquisitions++;
    });
    this.processor.on("error", (e, token) =>
      this.errors.push(`${token ?? "-"}: ${e instanceof Error ? e.message : String(e)}`),
    );
  }

  start(): Promise<void> {
    return this.processor.start();
  }

  stop(): Promise<void> {
    return this.processor.stop();
  }

  /** A crash: stops without releasing (leases expire). */
  crash(): Promise<void> {
    return this.processor.abandon();
  }
}

/** A lease document as both fleets write it (the fields these tests read). */
export interface LeaseDoc {
  id: string;
  LeaseToken?: string;
  Owner?: string | null;
  ContinuationToken?: string | null;
  FeedRange?: { Range?: { min: string; max: string } };
  Mode?: string;
  timestamp?: string;
}

/** Every lease of a prefix (not the `.info` / `.lock` documents). */
export async function readLeases(leases: Container, prefix: string): Promise<LeaseDoc[]> {
  const { resources } = await leases.items
    .query<LeaseDoc>({
      query: "SELECT * FROM c WHERE STARTSWITH(c.id, @p) AND IS_DEFINED(c.LeaseToken)",
      parameters: [{ name: "@p", value: prefix }],
    })
    .fetchAll();
  return resources;
}

/** Owner → number of leases it holds. */
export function ownership(leases: readonly LeaseDoc[]): Map<string, number> {
  const owners = new Map<string, number>();
  for (const l of leases) if (l.Owner) owners.set(l.Owner, (owners.get(l.Owner) ?? 0) + 1);
  return owners;
}

/**
 * Lease documents whose ranges overlap: two documents for one part of the key space means two hosts may own the
 * same changes (what happens when two fleets derive different lease ids). Ranges compare as EPK strings ("" to "FF").
 * A split parent (`splitParents`, by lease token) overlaps its children while the host that handles the split
 * replaces it — creates the children, then deletes the parent, which it no longer reads (both .NET and ours).
 */
export function overlappingLeases(
  leases: readonly LeaseDoc[],
  splitParents: ReadonlySet<string> = new Set(),
): string[] {
  const ranges = leases.map((l) => ({
    id: l.id,
    token: l.LeaseToken ?? "",
    min: l.FeedRange?.Range?.min ?? "",
    max: l.FeedRange?.Range?.max ?? "FF",
  }));
  const below = (x: string, y: string) => (y === "FF" ? x !== "FF" : x !== "FF" && x < y);
  const within = (a: (typeof ranges)[number], b: (typeof ranges)[number]) =>
    a.min >= b.min && !below(b.max, a.max);
  const found: string[] = [];
  for (let i = 0; i < ranges.length; i++) {
    for (let j = i + 1; j < ranges.length; j++) {
      const [a, b] = [ranges[i], ranges[j]];
      if (!(below(a.min, b.max) && below(b.min, a.max))) continue;
      if ((splitParents.has(a.token) && within(b, a)) || (splitParents.has(b.token) && within(a, b)))
        continue;
      found.push(`${a.id} [${a.min},${a.max}) ∩ ${b.id} [${b.min},${b.max})`);
    }
  }
  return found;
}

/**
 * Polls the lease container every 100 ms while a test runs and keeps what would be a safety violation: two lease
 * documents over one part of the key space, or a lease whose range is covered twice.
 */
export class LeaseWatch {
  readonly violations: string[] = [];
  /** Tokens of leases whose range the test split (see overlappingLeases). */
  readonly splitParents = new Set<string>();
  polls = 0;
  private running = true;
  private readonly done: Promise<void>;

  constructor(leases: Container, prefix: string) {
    this.done = (async () => {
      while (this.running) {
        try {
          const docs = await readLeases(leases, prefix);
          this.polls++;
          for (const v of overlappingLeases(docs, this.splitParents)) this.violations.push(v);
        } catch {
          // A failed poll proves nothing either way; the next one counts.
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}
