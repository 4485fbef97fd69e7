import { badRequest, CosmosError, conflict, notFound, preconditionFailed } from "../errors.js";
import type { RuMeter } from "../ru/meter.js";
import { ThroughputBudget } from "../ru/throughput.js";
import { Container, type ContainerHooks } from "./container.js";
import {
  normalizeIndexingPolicy,
  normalizePartitionKey,
  validateDefaultTtl,
  validateGeospatial,
  validateResourceId,
} from "./definitions.js";
import {
  initialRangeCount,
  MIN_THROUGHPUT,
  minimumThroughput,
  nextThroughput,
  type Offer,
  type OfferEntry,
  type OfferReplace,
  offerIdFor,
  type Throughput,
} from "./offers.js";
import type { SqlitePersistence } from "./persistence.js";
import { containerRidPart, decodeRid, encodeRid } from "./rid.js";
import type { JsonObject, PartitionKeyDefinition, PartitionKeyRangeInfo } from "./types.js";

// The account's registry and persistence; offers and container definitions have their own modules, re-exported here
// for the emulator's users.
export * from "./definitions.js";
export * from "./offers.js";

/**
 * How the account is billed, as an Azure account's capacity mode: "provisioned" (offers of RU/s on databases and
 * containers) or "serverless" (no offers; each container serves up to SERVERLESS_RU_PER_PARTITION RU/s per physical
 * partition, learn.microsoft.com/azure/cosmos-db/serverless-performance).
 */
export type CapacityMode = "provisioned" | "serverless";

/** A serverless container's capacity per physical partition (RU/s): learn.microsoft.com/azure/cosmos-db/serverless-performance. */
export const SERVERLESS_RU_PER_PARTITION = 5_000;

/** The service's 400 for throughput asked of a serverless account (its wording, with the resource kind). */
export function serverlessThroughputRefusal(kind: "database" | "container"): CosmosError {
  return badRequest(
    `Setting offer throughput or autopilot on ${kind} is not supported for serverless accounts.`,
  );
}

/** The service's 400 for the offers API on a serverless account (its wording). */
export const SERVERLESS_OFFERS_REFUSAL =
  "Reading or replacing offers is not supported for serverless accounts.";

export interface AccountOptions {
  /** Physical ranges for every new container; when unset, derived from throughput (see initialRangeCount). */
  rangesPerContainer?: number;
  /** "provisioned" (default) or "serverless": see CapacityMode. */
  capacityMode?: CapacityMode;
  /** Enforce provisioned throughput with 429s (default true). */
  enforceThroughput: boolean;
  meter: RuMeter;
  persistence?: SqlitePersistence;
  now: () => number;
  /** The monotonic clock (ms) the throughput budgets refill by; `performance.now` when absent. */
  throughputClock?: () => number;
}

export class CosmosDatabase {
  readonly containers = new Map<string, Container>();
  constructor(
    readonly id: string,
    readonly rid: string,
    readonly body: JsonObject,
    /** Shared throughput of its containers that have none of their own. */
    public offer: Offer | undefined,
    readonly budget: ThroughputBudget | undefined,
  ) {}

  get throughput(): Throughput | undefined {
    return this.offer?.throughput;
  }
}

interface SavedContainer {
  databaseId: string;
  definition: JsonObject;
  pk: PartitionKeyDefinition;
  layout: { ranges: PartitionKeyRangeInfo[]; gone: Record<string, string[]>; nextRangeId: number };
  /** Saved by older versions instead of `offer`. */
  throughput?: Throughput;
  offer?: Offer;
  /** Commit sequence and document sequence high-water marks (changes below them may have been compacted away). */
  seqFloor?: number;
  /**
   * Saved before ranges counted their own LSNs: the container-wide LSN (what is now the commit sequence), which
   * every range's own LSN then starts from.
   */
  lsnFloor?: number;
  docSeqFloor: number;
}

function rid(bytes: number[]): string {
  return encodeRid(Uint8Array.from(bytes));
}

function u32(n: number): number[] {
  return [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
}

function etagFor(seq: number): string {
  return `"${seq.toString(16).padStart(8, "0")}-0000-0000-0000-000000000000"`;
}

/** Databases and containers of the emulated account, with their offers, budgets and persistence. */
export class Account {
  readonly databases = new Map<string, CosmosDatabase>();
  private ridSeq = 0;
  /** Offers of containers with throughput of their own. */
  private readonly containerOffers = new WeakMap<Container, Offer>();

  constructor(readonly options: AccountOptions) {
    const p = options.persistence;
    if (p) this.load(p);
  }

  private nextSeq(): number {
    this.ridSeq++;
    this.options.persistence?.setMeta("ridSeq", String(this.ridSeq));
    return this.ridSeq;
  }

  private nowSeconds(): number {
    return Math.floor(this.options.now() / 1000);
  }

  database(id: string): CosmosDatabase {
    const db = this.databases.get(id);
    if (!db) throw notFound(`Database '${id}' does not exist.`);
    return db;
  }

  container(dbId: string, id: string): Container {
    const c = this.database(dbId).containers.get(id);
    if (!c) throw notFound(`Container '${id}' does not exist in database '${dbId}'.`);
    return c;
  }

  createDatabase(body: JsonObject, throughput: Throughput | undefined): CosmosDatabase {
    if (throughput && this.serverless) throw serverlessThroughputRefusal("database");
    validateResourceId(body.id, "database");
    const id = body.id as string;
    if (this.databases.has(id)) throw conflict(`Database '${id}' already exists.`);
    const seq = this.nextSeq();
    const r = rid(u32(seq));
    const resource: JsonObject = {
      id,
      _rid: r,
      _self: `dbs/${r}/`,
      _etag: etagFor(seq),
      _colls: "colls/",
      _users: "users/",
      _ts: this.nowSeconds(),
    };
    const offer = throughput && this.newOffer(throughput);
    const db = new CosmosDatabase(id, r, resource, offer, this.budgetFor(offer));
    this.databases.set(id, db);
    this.saveDatabase(db);
    return db;
  }

  deleteDatabase(id: string): void {
    const db = this.database(id);
    this.databases.delete(id);
    this.options.persistence?.deleteDatabase(
      db.rid,
      [...db.containers.values()].map((c) => c.rid),
    );
  }

  createContainer(
    dbId: string,
    body: JsonObject,
    throughput: Throughput | undefined,
    rangeCountOverride?: number,
  ): Container {
    const db = this.database(dbId);
    if (throughput && this.serverless) throw serverlessThroughputRefusal("container");
    validateResourceId(body.id, "container");
    const id = body.id as string;
    if (db.containers.has(id)) throw conflict(`Container '${id}' already exists in database '${dbId}'.`);
    const pk = normalizePartitionKey(body.partitionKey);
    validateDefaultTtl(body.defaultTtl);
    validateGeospatial(body.geospatialConfig, body.indexingPolicy);
    const indexingPolicy = normalizeIndexingPolicy(body.indexingPolicy);
    const seq = this.nextSeq();
    const r = rid([...decodeRid(db.rid), ...containerRidPart(seq)]);
    const definition: JsonObject = {
      id,
      indexingPolicy,
      partitionKey: pk,
      ...(body.defaultTtl !== undefined ? { defaultTtl: body.defaultTtl } : {}),
      ...(body.changeFeedPolicy !== undefined ? { changeFeedPolicy: body.changeFeedPolicy } : {}),
      uniqueKeyPolicy: body.uniqueKeyPolicy ?? { uniqueKeys: [] },
      conflictResolutionPolicy: body.conflictResolutionPolicy ?? {
        mode: "LastWriterWins",
        conflictResolutionPath: "/_ts",
        conflictResolutionProcedure: "",
      },
      geospatialConfig: body.geospatialConfig ?? { type: "Geography" },
      _rid: r,
      _ts: this.nowSeconds(),
      _self: `dbs/${db.rid}/colls/${r}/`,
      _etag: etagFor(seq),
      _docs: "docs/",
      _sprocs: "sprocs/",
      _triggers: "triggers/",
      _udfs: "udfs/",
      _conflicts: "conflicts/",
    };
    const rangeCount =
      rangeCountOverride ?? this.options.rangesPerContainer ?? initialRangeCount(throughput, db.throughput);
    const offer = this.serverless
      ? undefined
      : throughput
        ? this.newOffer(throughput)
        : db.offer
          ? undefined
          : this.defaultOffer();
    const c = new Container(
      dbId,
      id,
      r,
      definition,
      pk,
      { rangeCount },
      this.serverless ? this.serverlessBudget(rangeCount) : (this.budgetFor(offer) ?? db.budget),
      this.hooks(),
    );
    if (offer) this.containerOffers.set(c, offer);
    db.containers.set(id, c);
    this.saveContainer(c);
    return c;
  }

  /** Replaces mutable container settings (defaultTtl, indexing policy); the partition key cannot change. */
  replaceContainer(dbId: string, id: string, body: JsonObject): Container {
    const c = this.container(dbId, id);
    if (body.id !== undefined && body.id !== id)
      throw badRequest("The container id in the body must match the URL.");
    if (body.partitionKey !== undefined) {
      const pk = normalizePartitionKey(body.partitionKey);
      if (JSON.stringify(pk.paths) !== JSON.stringify(c.pk.paths) || pk.version !== c.pk.version) {
        throw badRequest("The partition key of a container cannot be changed.");
      }
    }
    validateDefaultTtl(body.defaultTtl);
    const next: JsonObject = { ...c.definition };
    if (body.defaultTtl === undefined) delete next.defaultTtl;
    else next.defaultTtl = body.defaultTtl;
    if (body.indexingPolicy !== undefined) next.indexingPolicy = normalizeIndexingPolicy(body.indexingPolicy);
    if (body.changeFeedPolicy !== undefined) next.changeFeedPolicy = body.changeFeedPolicy;
    next._ts = this.nowSeconds();
    next._etag = etagFor(this.nextSeq());
    c.definition = next;
    this.saveContainer(c);
    return c;
  }

  deleteContainer(dbId: string, id: string): void {
    const db = this.database(dbId);
    const c = this.container(dbId, id);
    db.containers.delete(id);
    this.options.persistence?.deleteContainer(c.rid);
  }

  // ---------------------------------------------------------------- offers

  /** Every offer of the account: shared databases first, then containers with throughput of their own. */
  *offers(): Generator<OfferEntry> {
    for (const db of this.databases.values()) {
      if (db.offer) yield { offer: db.offer, resource: db.body._self as string, resourceRid: db.rid };
      for (const c of db.containers.values()) {
        const offer = this.containerOffers.get(c);
        if (offer) yield { offer, resource: c.definition._self as string, resourceRid: c.rid };
      }
    }
  }

  offer(id: string): OfferEntry {
    for (const e of this.offers()) if (e.offer.id === id) return e;
    throw notFound(`Offer '${id}' does not exist.`);
  }

  /**
   * Replaces an offer's throughput (learn.microsoft.com/rest/api/cosmos-db/replace-an-offer): validated as at
   * creation and against the minimum the resource's history allows, If-Match honoured, the enforced budget
   * changed at once, persisted. The partition layout stays as it is: the service splits partitions
   * asynchronously when the new RU/s exceed partitions × 10,000; the emulator does not split by itself.
   * Switching between manual and autoscale needs the migration headers, as the service.
   */
  replaceOffer(id: string, change: OfferReplace): OfferEntry {
    const entry = this.offer(id);
    const { offer } = entry;
    const { body } = change;
    if (change.ifMatch !== undefined && change.ifMatch !== "*" && change.ifMatch !== offer.etag)
      throw preconditionFailed();
    if (body.id !== undefined && body.id !== offer.id)
      throw badRequest(`The offer id in the body ('${String(body.id)}') must match the URL ('${offer.id}').`);
    if (body.offerVersion !== "V2") {
      throw badRequest(
        `The offerVersion must be 'V2' (user-defined throughput); got ${JSON.stringify(body.offerVersion)}.`,
      );
    }
    if (body.resource !== undefined && body.resource !== entry.resource)
      throw badRequest("The offer's resource cannot be changed.");
    if (body.offerResourceId !== undefined && body.offerResourceId !== entry.resourceRid)
      throw badRequest("The offer's offerResourceId cannot be changed.");
    const content = body.content;
    if (content === null || typeof content !== "object" || Array.isArray(content))
      throw badRequest("The offer needs a content object, e.g. {offerThroughput: 400}.");
    const next = nextThroughput(offer, content as JsonObject, change.migrateTo);
    if (!change.migrateTo) {
      const min = minimumThroughput(offer, next.autoscale);
      if (next.ruPerSecond < min) {
        throw badRequest(
          `The ${next.autoscale ? "autoscale maximum throughput" : "offer throughput"} ${next.ruPerSecond} RU/s is below this resource's minimum of ${min} RU/s (it depends on the highest throughput ever provisioned, ${offer.maxEverProvisioned} RU/s).`,
        );
      }
    }
    offer.throughput = next;
    offer.maxEverProvisioned = Math.max(offer.maxEverProvisioned, next.ruPerSecond);
    offer.etag = etagFor(this.nextSeq());
    offer.ts = this.nowSeconds();
    offer.lastReplaceTs = offer.ts;
    delete offer.defaulted;
    this.applyOffer(entry);
    return entry;
  }

  /** The lowest RU/s (or autoscale maximum) a replace of this offer may set (`x-ms-cosmos-min-throughput`). */
  minimumThroughput(offer: Offer): number {
    return minimumThroughput(offer, offer.throughput.autoscale);
  }

  /** After an offer changed: the owner's budget takes the new rate, and the owner is saved. */
  private applyOffer(entry: OfferEntry): void {
    const ru = entry.offer.throughput.ruPerSecond;
    for (const db of this.databases.values()) {
      if (db.offer === entry.offer) {
        db.budget?.setRate(ru);
        this.saveDatabase(db);
        return;
      }
      for (const c of db.containers.values()) {
        if (this.containerOffers.get(c) === entry.offer) {
          // A default offer replaced on purpose is enforced from now on (when the account enforces throughput).
          if (c.budget === undefined) c.budget = this.budgetFor(entry.offer);
          c.budget?.setRate(ru);
          this.saveContainer(c);
          return;
        }
      }
    }
  }

  private newOffer(throughput: Throughput): Offer {
    const seq = this.nextSeq();
    return {
      id: offerIdFor(seq),
      throughput,
      maxEverProvisioned: throughput.ruPerSecond,
      etag: etagFor(seq),
      ts: this.nowSeconds(),
    };
  }

  /** The service's offer for a container created without throughput: 400 RU/s manual (see Offer.defaulted). */
  private defaultOffer(): Offer {
    return { ...this.newOffer({ ruPerSecond: MIN_THROUGHPUT, autoscale: false }), defaulted: true };
  }

  /** Whether the account is serverless (AccountOptions.capacityMode). */
  get serverless(): boolean {
    return this.options.capacityMode === "serverless";
  }

  /** A serverless container's budget: its capacity for `partitions` physical partitions, when throughput is enforced. */
  private serverlessBudget(partitions: number): ThroughputBudget | undefined {
    return this.options.enforceThroughput
      ? new ThroughputBudget(
          SERVERLESS_RU_PER_PARTITION * partitions,
          this.options.throughputClock,
          "serverless container's capacity",
        )
      : undefined;
  }

  private budgetFor(offer: Offer | undefined): ThroughputBudget | undefined {
    return offer && !offer.defaulted && this.options.enforceThroughput
      ? new ThroughputBudget(offer.throughput.ruPerSecond, this.options.throughputClock)
      : undefined;
  }

  private hooks(): ContainerHooks {
    const p = this.options.persistence;
    return {
      now: this.options.now,
      persist: p ? (c, entries) => p.appendChanges(c.rid, entries) : undefined,
      rangesChanged: (c) => {
        // A serverless container's capacity follows its physical partitions (a split adds one).
        if (this.serverless) c.budget?.setRate(SERVERLESS_RU_PER_PARTITION * c.ranges.length);
        this.saveContainer(c);
      },
    };
  }

  private saveDatabase(db: CosmosDatabase): void {
    this.options.persistence?.saveResource(
      "database",
      db.rid,
      "",
      JSON.stringify({ body: db.body, offer: db.offer }),
    );
  }

  saveContainer(c: Container): void {
    const p = this.options.persistence;
    if (!p) return;
    const db = this.database(c.databaseId);
    const saved: SavedContainer = {
      databaseId: c.databaseId,
      definition: c.definition,
      pk: c.pk,
      layout: c.layout(),
      offer: this.containerOffers.get(c),
      seqFloor: c.seq,
      docSeqFloor: c.docSeq,
    };
    p.saveResource("container", c.rid, db.rid, JSON.stringify(saved));
  }

  /** Removes change-log entries older than the retention window from memory and disk. */
  compact(retentionMs: number): void {
    for (const db of this.databases.values()) {
      for (const c of db.containers.values()) {
        const dropped = c.compact(retentionMs);
        if (dropped.length > 0 && this.options.persistence) {
          this.saveContainer(c);
          this.options.persistence.pruneChanges(c.rid, dropped);
        }
      }
    }
  }

  *allContainers(): Generator<Container> {
    for (const db of this.databases.values()) yield* db.containers.values();
  }

  private load(p: SqlitePersistence): void {
    this.ridSeq = Number(p.getMeta("ridSeq") ?? "0");
    const dbByRid = new Map<string, CosmosDatabase>();
    // Data saved before offers existed has throughput without an offer: it gets one, saved at once so its id
    // stays the same across restarts.
    const resave: (() => void)[] = [];
    for (const r of p.loadResources("database")) {
      const saved = JSON.parse(r.json) as { body: JsonObject; throughput?: Throughput; offer?: Offer };
      const offer = saved.offer ?? (saved.throughput && this.newOffer(saved.throughput));
      const db = new CosmosDatabase(saved.body.id as string, r.rid, saved.body, offer, this.budgetFor(offer));
      this.databases.set(db.id, db);
      dbByRid.set(r.rid, db);
      if (!saved.offer && offer) resave.push(() => this.saveDatabase(db));
    }
    for (const r of p.loadResources("container")) {
      const saved = JSON.parse(r.json) as SavedContainer;
      const db = dbByRid.get(r.parentRid);
      if (!db) continue;
      // Containers saved without throughput before default offers existed get one, as new containers do.
      const offer =
        saved.offer ??
        (saved.throughput ? this.newOffer(saved.throughput) : db.offer ? undefined : this.defaultOffer());
      // Serverless, offers saved under a provisioned run are kept (not served): a later provisioned run has them.
      const budget = this.serverless ? undefined : (this.budgetFor(offer) ?? db.budget);
      const c = new Container(
        db.id,
        saved.definition.id as string,
        r.rid,
        saved.definition,
        saved.pk,
        saved.layout,
        budget,
        this.hooks(),
      );
      if (offer) this.containerOffers.set(c, offer);
      for (const change of p.loadChanges(r.rid)) c.restore(change);
      // A folder from before per-range LSNs: its container-wide LSN is the floor of every range's own.
      const legacy = saved.seqFloor === undefined;
      c.seq = Math.max(c.seq, saved.seqFloor ?? saved.lsnFloor ?? 0);
      c.finishRestore(legacy ? c.seq : 0);
      c.docSeq = Math.max(c.docSeq, saved.docSeqFloor);
      if (this.serverless) c.budget = this.serverlessBudget(c.ranges.length);
      db.containers.set(c.id, c);
      if ((!saved.offer && offer) || legacy) resave.push(() => this.saveContainer(c));
    }
    for (const save of resave) save();
  }
}

export { CosmosError };
