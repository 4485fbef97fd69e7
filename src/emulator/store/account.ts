import { badRequest, CosmosError, conflict, notFound, preconditionFailed } from "../errors.js";
import type { RuMeter } from "../ru/meter.js";
import { ThroughputBudget } from "../ru/throughput.js";
import { Container, type ContainerHooks, validateId } from "./container.js";
import type { SqlitePersistence } from "./persistence.js";
import { containerRidPart, decodeRid, encodeRid } from "./rid.js";
import type { JsonObject, PartitionKeyDefinition, PartitionKeyRangeInfo } from "./types.js";

// Throughput limits of the service (learn.microsoft.com/azure/cosmos-db/concepts-limits, "Provisioned
// throughput" and "Minimum throughput limits"; request-units: manual RU/s in increments of 100;
// provision-throughput-autoscale: autoscale max RU/s in increments of 1000).
/** Minimum manual throughput of a container or shared database (RU/s). */
export const MIN_THROUGHPUT = 400;
/** Manual throughput is set in steps of this many RU/s. */
export const THROUGHPUT_STEP = 100;
/** Minimum autoscale maximum (RU/s; it then scales between 100 and 1000). */
export const MIN_AUTOSCALE_MAX_THROUGHPUT = 1000;
/** The autoscale maximum is set in steps of this many RU/s. */
export const AUTOSCALE_STEP = 1000;
/** Default maximum RU/s per container or database (more needs a support request to the service). */
export const MAX_THROUGHPUT = 1_000_000;

// Physical partitions at creation, by the service's documented heuristic
// (learn.microsoft.com/azure/cosmos-db/scaling-provisioned-throughput-best-practices, "How to optimize RU/s
// for large data ingestion"): ROUNDUP(starting RU/s / 6000) for a container with dedicated manual
// throughput, ROUNDUP(RU/s / 10,000) for autoscale (its max RU/s) and for shared-throughput databases.
/** Initial RU/s per physical partition of a container with dedicated manual throughput. */
export const RU_PER_INITIAL_RANGE_MANUAL = 6000;
/** Initial RU/s per physical partition for autoscale and shared databases (also a partition's maximum). */
export const RU_PER_INITIAL_RANGE = 10_000;
/** Upper bound of physical ranges a container may start with (no request can allocate more). */
export const MAX_INITIAL_RANGES = 64;

/** Largest `defaultTtl` (seconds): a 32-bit signed integer (concepts-limits, "Maximum TTL value"). */
export const MAX_TTL_SECONDS = 2_147_483_647;

export interface Throughput {
  /** Manual RU/s, or the autoscale maximum. */
  ruPerSecond: number;
  autoscale: boolean;
}

/** The offer (throughput settings) of a database or container that has throughput of its own. */
export interface Offer {
  /** Its id and _rid: 4 characters, as the service's. */
  readonly id: string;
  throughput: Throughput;
  /** Highest manual RU/s or autoscale maximum ever set; it raises the minimum a replace may set. */
  maxEverProvisioned: number;
  etag: string;
  ts: number;
  /** When the throughput was last replaced (seconds since epoch), if it was. */
  lastReplaceTs?: number;
  /**
   * Set on the offer the emulator gives a container created without throughput in a database without shared
   * throughput (the service gives it 400 RU/s manual): readable and replaceable, but not enforced until a replace
   * sets a throughput on purpose — the dev host's own containers (its durable task hub has no Azure counterpart)
   * are created without throughput and must not be throttled by a figure nobody chose.
   */
  defaulted?: true;
}

/** An offer with the resource it belongs to. */
export interface OfferEntry {
  offer: Offer;
  /** The owner's `_self` (`dbs/{rid}/` or `dbs/{rid}/colls/{rid}/`): the offer's `resource`. */
  resource: string;
  /** The owner's `_rid`: the offer's `offerResourceId`. */
  resourceRid: string;
}

/** A replace of an offer: the new body, and the request headers that govern it. */
export interface OfferReplace {
  body: JsonObject;
  ifMatch?: string;
  /** `x-ms-cosmos-migrate-offer-to-autopilot` / `x-ms-cosmos-migrate-offer-to-manual-throughput`. */
  migrateTo?: "autoscale" | "manual";
}

export interface AccountOptions {
  /** Physical ranges for every new container; when unset, derived from throughput (see initialRangeCount). */
  rangesPerContainer?: number;
  /** Enforce provisioned throughput with 429s (default true). */
  enforceThroughput: boolean;
  meter: RuMeter;
  persistence?: SqlitePersistence;
  now: () => number;
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
  /** LSN and document sequence high-water marks (changes below them may have been compacted away). */
  lsnFloor: number;
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

const OFFER_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A 4-character offer id (longer past 62^4) from a unique sequence number; URL-safe, unlike base64. */
function offerIdFor(seq: number): string {
  let id = "";
  let n = seq;
  do {
    id = OFFER_ID_ALPHABET[n % 62] + id;
    n = Math.floor(n / 62);
  } while (n > 0);
  return id.padStart(4, OFFER_ID_ALPHABET[0]);
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
    validateResourceId(body.id, "container");
    const id = body.id as string;
    if (db.containers.has(id)) throw conflict(`Container '${id}' already exists in database '${dbId}'.`);
    const pk = normalizePartitionKey(body.partitionKey);
    validateDefaultTtl(body.defaultTtl);
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
    const offer = throughput ? this.newOffer(throughput) : db.offer ? undefined : this.defaultOffer();
    const c = new Container(
      dbId,
      id,
      r,
      definition,
      pk,
      { rangeCount },
      this.budgetFor(offer) ?? db.budget,
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

  private budgetFor(offer: Offer | undefined): ThroughputBudget | undefined {
    return offer && !offer.defaulted && this.options.enforceThroughput
      ? new ThroughputBudget(offer.throughput.ruPerSecond)
      : undefined;
  }

  private hooks(): ContainerHooks {
    const p = this.options.persistence;
    return {
      now: this.options.now,
      persist: p ? (c, entries) => p.appendChanges(c.rid, entries) : undefined,
      rangesChanged: (c) => this.saveContainer(c),
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
      lsnFloor: c.lsn,
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
    const legacy: (() => void)[] = [];
    for (const r of p.loadResources("database")) {
      const saved = JSON.parse(r.json) as { body: JsonObject; throughput?: Throughput; offer?: Offer };
      const offer = saved.offer ?? (saved.throughput && this.newOffer(saved.throughput));
      const db = new CosmosDatabase(saved.body.id as string, r.rid, saved.body, offer, this.budgetFor(offer));
      this.databases.set(db.id, db);
      dbByRid.set(r.rid, db);
      if (!saved.offer && offer) legacy.push(() => this.saveDatabase(db));
    }
    for (const r of p.loadResources("container")) {
      const saved = JSON.parse(r.json) as SavedContainer;
      const db = dbByRid.get(r.parentRid);
      if (!db) continue;
      // Containers saved without throughput before default offers existed get one, as new containers do.
      const offer =
        saved.offer ??
        (saved.throughput ? this.newOffer(saved.throughput) : db.offer ? undefined : this.defaultOffer());
      const c = new Container(
        db.id,
        saved.definition.id as string,
        r.rid,
        saved.definition,
        saved.pk,
        saved.layout,
        this.budgetFor(offer) ?? db.budget,
        this.hooks(),
      );
      if (offer) this.containerOffers.set(c, offer);
      for (const change of p.loadChanges(r.rid)) c.restore(change);
      c.lsn = Math.max(c.lsn, saved.lsnFloor);
      c.docSeq = Math.max(c.docSeq, saved.docSeqFloor);
      db.containers.set(c.id, c);
      if (!saved.offer && offer) legacy.push(() => this.saveContainer(c));
    }
    for (const save of legacy) save();
  }
}

/**
 * Physical ranges a new container starts with (the service's heuristic, see RU_PER_INITIAL_RANGE_MANUAL):
 * its own manual RU/s / 6000, its own autoscale max / 10,000, or its shared database's RU/s / 10,000, rounded
 * up; one without throughput; never more than MAX_INITIAL_RANGES.
 */
export function initialRangeCount(own: Throughput | undefined, shared: Throughput | undefined): number {
  const t = own ?? shared;
  if (!t) return 1;
  const perRange = own && !own.autoscale ? RU_PER_INITIAL_RANGE_MANUAL : RU_PER_INITIAL_RANGE;
  return Math.min(MAX_INITIAL_RANGES, Math.max(1, Math.ceil(t.ruPerSecond / perRange)));
}

/**
 * The lowest RU/s a replace may set (concepts-limits "Minimum throughput limits", autoscale-faq "How do I
 * lower the maximum RU/s?"; storage is not counted): manual MAX(400, highest ever / 100), autoscale max
 * MAX(1000, highest ever / 10), rounded up to the step.
 */
function minimumThroughput(offer: Offer, autoscale: boolean): number {
  if (autoscale) {
    const floor = Math.ceil(offer.maxEverProvisioned / 10 / AUTOSCALE_STEP) * AUTOSCALE_STEP;
    return Math.max(MIN_AUTOSCALE_MAX_THROUGHPUT, floor);
  }
  const floor = Math.ceil(offer.maxEverProvisioned / 100 / THROUGHPUT_STEP) * THROUGHPUT_STEP;
  return Math.max(MIN_THROUGHPUT, floor);
}

/**
 * The throughput an offer replace asks for. Without a migration header the offer keeps its kind (a manual
 * offer given autoscale settings, or the reverse, is a 400 naming the header). With one, the service picks
 * the value and ignores the body's (autoscale-faq, "How does the migration between autoscale and standard
 * (manual) provisioned throughput work?"): to autoscale MAX(1000, current RU/s, highest ever / 10) rounded
 * up to 1000 (storage is not counted); to manual the current autoscale maximum.
 */
function nextThroughput(
  offer: Offer,
  content: JsonObject,
  migrateTo: "autoscale" | "manual" | undefined,
): Throughput {
  const current = offer.throughput;
  if (migrateTo === "autoscale") {
    if (current.autoscale) throw badRequest("The offer already uses autoscale throughput.");
    const max = Math.max(MIN_AUTOSCALE_MAX_THROUGHPUT, current.ruPerSecond, offer.maxEverProvisioned / 10);
    return {
      ruPerSecond: Math.min(MAX_THROUGHPUT, Math.ceil(max / AUTOSCALE_STEP) * AUTOSCALE_STEP),
      autoscale: true,
    };
  }
  if (migrateTo === "manual") {
    if (!current.autoscale) throw badRequest("The offer already uses manual throughput.");
    return { ruPerSecond: current.ruPerSecond, autoscale: false };
  }
  const settings = content.offerAutopilotSettings;
  const hasSettings = settings !== undefined && settings !== null;
  if (current.autoscale) {
    if (!hasSettings) {
      throw badRequest(
        "This offer uses autoscale throughput: set content.offerAutopilotSettings.maxThroughput, or send x-ms-cosmos-migrate-offer-to-manual-throughput: true to switch it to manual throughput.",
      );
    }
    if (typeof settings !== "object" || Array.isArray(settings))
      throw badRequest("content.offerAutopilotSettings must be an object like {maxThroughput: 4000}.");
    return autoscaleThroughput((settings as JsonObject).maxThroughput);
  }
  if (hasSettings) {
    throw badRequest(
      "This offer uses manual throughput: set content.offerThroughput, or send x-ms-cosmos-migrate-offer-to-autopilot: true to switch it to autoscale.",
    );
  }
  return manualThroughput(content.offerThroughput);
}

/** Manual RU/s as the service accepts them: 400 to 1,000,000 in steps of 100. */
function manualThroughput(value: unknown): Throughput {
  const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (
    typeof n !== "number" ||
    !Number.isInteger(n) ||
    n < MIN_THROUGHPUT ||
    n > MAX_THROUGHPUT ||
    n % THROUGHPUT_STEP !== 0
  ) {
    throw badRequest(
      `The offer should have valid throughput values between ${MIN_THROUGHPUT} and ${MAX_THROUGHPUT} inclusive in increments of ${THROUGHPUT_STEP}; got ${JSON.stringify(value)}.`,
    );
  }
  return { ruPerSecond: n, autoscale: false };
}

/** An autoscale maximum as the service accepts it: 1000 to 1,000,000 in steps of 1000. */
function autoscaleThroughput(value: unknown): Throughput {
  if (
    typeof value !== "number" ||
    !Number.isInteger(value) ||
    value < MIN_AUTOSCALE_MAX_THROUGHPUT ||
    value > MAX_THROUGHPUT ||
    value % AUTOSCALE_STEP !== 0
  ) {
    throw badRequest(
      `The offer should have valid autoscale maxThroughput values between ${MIN_AUTOSCALE_MAX_THROUGHPUT} and ${MAX_THROUGHPUT} inclusive in increments of ${AUTOSCALE_STEP}; got ${JSON.stringify(value)}.`,
    );
  }
  return { ruPerSecond: value, autoscale: true };
}

function validateResourceId(id: unknown, what: string): void {
  if (typeof id !== "string" || id.length === 0)
    throw badRequest(`The ${what} id must be a non-empty string.`);
  validateId(id, what);
}

function validateDefaultTtl(ttl: unknown): void {
  if (ttl === undefined) return;
  if (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl === 0 || ttl < -1 || ttl > MAX_TTL_SECONDS) {
    throw badRequest(
      `The defaultTtl must be -1 (on, no default expiry) or a whole number of seconds from 1 to ${MAX_TTL_SECONDS}; got ${JSON.stringify(ttl)}.`,
    );
  }
}

/** Fills the service's defaults into a partition key definition and validates it. */
export function normalizePartitionKey(input: unknown): PartitionKeyDefinition {
  if (input === undefined || input === null) return { paths: ["/_partitionKey"], kind: "Hash", version: 1 };
  if (typeof input !== "object")
    throw badRequest("The partitionKey must be {paths: ['/path'], kind?, version?}.");
  const def = input as { paths?: unknown; kind?: unknown; version?: unknown; systemKey?: unknown };
  if (!Array.isArray(def.paths) || def.paths.length === 0) {
    throw badRequest("The partitionKey needs at least one path, e.g. {paths: ['/tenantId']}.");
  }
  if (def.paths.length > 3) throw badRequest("A hierarchical partition key can have at most 3 paths.");
  for (const p of def.paths) {
    if (typeof p !== "string" || !/^\/[^/]/.test(p) || p.endsWith("/")) {
      throw badRequest(
        `The partition key path ${JSON.stringify(p)} is invalid; it must look like '/property'.`,
      );
    }
  }
  const kind = def.kind ?? (def.paths.length > 1 ? "MultiHash" : "Hash");
  if (kind !== "Hash" && kind !== "MultiHash")
    throw badRequest(`Partition key kind '${String(kind)}' is not supported.`);
  if (kind === "Hash" && def.paths.length > 1)
    throw badRequest("Several partition key paths need kind 'MultiHash'.");
  const version = def.version ?? (kind === "MultiHash" ? 2 : 1);
  if (version !== 1 && version !== 2)
    throw badRequest(`Partition key version ${String(version)} is not supported.`);
  if (kind === "MultiHash" && version !== 2) throw badRequest("A MultiHash partition key needs version 2.");
  const out: PartitionKeyDefinition = { paths: def.paths as string[], kind, version };
  if (def.systemKey === true) out.systemKey = true;
  return out;
}

/** The path the service excludes from indexing unless a policy names `_etag` itself. */
const ETAG_PATH = '/"_etag"/?';

/**
 * Fills the service's defaults into an indexing policy and validates it (learn.microsoft.com/azure/cosmos-db/
 * index-policy): mode `consistent` (or `none`; new containers cannot choose `lazy`), `automatic: true`,
 * included `/*` when no paths are given; the root path `/*` must be included or excluded (the first API's root
 * `/` or `/?` counts as, and is stored as, `/*`); `_etag` is
 * excluded unless the policy names it; composite indexes have two or more paths whose `order` is `ascending`
 * (the default) or `descending`. Anything else comes back as given.
 */
export function normalizeIndexingPolicy(input: unknown): JsonObject {
  if (input === undefined || input === null) {
    return {
      indexingMode: "consistent",
      automatic: true,
      includedPaths: [{ path: "/*" }],
      excludedPaths: [{ path: ETAG_PATH }],
    };
  }
  if (typeof input !== "object" || Array.isArray(input))
    throw badRequest("The indexingPolicy must be a JSON object.");
  const policy: JsonObject = { ...(input as JsonObject) };
  const mode = policy.indexingMode ?? "consistent";
  const modeName = typeof mode === "string" ? mode.toLowerCase() : "";
  if (modeName === "lazy")
    throw badRequest("New containers cannot use the lazy indexing mode; use consistent or none.");
  if (modeName !== "consistent" && modeName !== "none") {
    throw badRequest(`The indexingMode must be 'consistent' or 'none'; got ${JSON.stringify(mode)}.`);
  }
  policy.indexingMode = modeName;
  if (policy.automatic === undefined) policy.automatic = true;
  else if (typeof policy.automatic !== "boolean")
    throw badRequest("The indexingPolicy's automatic must be true or false.");
  const noPaths = policy.includedPaths === undefined && policy.excludedPaths === undefined;
  const included = indexPaths(policy.includedPaths, "includedPaths");
  const excluded = indexPaths(policy.excludedPaths, "excludedPaths");
  if (modeName === "consistent") {
    if (noPaths) included.push({ path: "/*" });
    if (![...included, ...excluded].some((p) => p.path === "/*")) {
      throw badRequest(
        'The special mandatory indexing path "/*" is not provided in any of the path type sets (includedPaths or excludedPaths).',
      );
    }
    if (![...included, ...excluded].some((p) => String(p.path).includes("_etag")))
      excluded.push({ path: ETAG_PATH });
  }
  policy.includedPaths = included;
  policy.excludedPaths = excluded;
  if (policy.compositeIndexes !== undefined)
    policy.compositeIndexes = compositeIndexes(policy.compositeIndexes);
  return policy;
}

const LEGACY_ROOT_PATHS = new Set(["/", "/?"]);

function indexPaths(value: unknown, name: string): JsonObject[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw badRequest(`The indexingPolicy's ${name} must be an array of {path}.`);
  return value.map((entry) => {
    if (entry === null || typeof entry !== "object" || Array.isArray(entry))
      throw badRequest(`Every entry of ${name} must be an object like {"path": "/name/?"}.`);
    const path = (entry as JsonObject).path;
    if (typeof path !== "string" || !path.startsWith("/"))
      throw badRequest(`The ${name} path ${JSON.stringify(path)} is invalid; it must start with '/'.`);
    // The first API's root path: "/" (and its scalar form "/?") meant the whole document; the service still accepts
    // it and answers with the root wildcard it stands for.
    if (LEGACY_ROOT_PATHS.has(path)) return { ...(entry as JsonObject), path: "/*" };
    return { ...(entry as JsonObject) };
  });
}

function compositeIndexes(value: unknown): JsonObject[][] {
  if (!Array.isArray(value))
    throw badRequest("compositeIndexes must be an array of arrays of {path, order}.");
  return value.map((index) => {
    if (!Array.isArray(index) || index.length < 2)
      throw badRequest(
        "Every composite index must list two or more paths, e.g. [{path: '/a'}, {path: '/b'}].",
      );
    return index.map((entry) => {
      if (entry === null || typeof entry !== "object" || Array.isArray(entry))
        throw badRequest(
          'Every composite index path must be an object like {"path": "/name", "order": "ascending"}.',
        );
      const { path, order } = entry as JsonObject;
      if (typeof path !== "string" || !path.startsWith("/") || path.endsWith("*"))
        throw badRequest(
          `The composite index path ${JSON.stringify(path)} is invalid; it must start with '/' and cannot use the '*' wildcard.`,
        );
      const orderName =
        order === undefined ? "ascending" : typeof order === "string" ? order.toLowerCase() : "";
      if (orderName !== "ascending" && orderName !== "descending") {
        throw badRequest(
          `The composite index order for ${path} must be 'ascending' or 'descending'; got ${JSON.stringify(order)}.`,
        );
      }
      return { ...(entry as JsonObject), order: orderName };
    });
  });
}

/**
 * The throughput asked for at creation: `x-ms-offer-throughput` (manual) or
 * `x-ms-cosmos-offer-autopilot-settings` (autoscale), validated as the service does; both at once is a 400.
 */
export function parseThroughputHeaders(
  manual: string | undefined,
  autoscale: string | undefined,
): Throughput | undefined {
  if (manual !== undefined && autoscale !== undefined) {
    throw badRequest(
      "Specify either x-ms-offer-throughput (manual) or x-ms-cosmos-offer-autopilot-settings (autoscale), not both.",
    );
  }
  if (manual !== undefined) return manualThroughput(manual);
  if (autoscale !== undefined) {
    let settings: unknown;
    try {
      settings = JSON.parse(autoscale);
    } catch {
      throw badRequest('x-ms-cosmos-offer-autopilot-settings must be JSON like {"maxThroughput": 4000}.');
    }
    if (settings === null || typeof settings !== "object" || Array.isArray(settings))
      throw badRequest('x-ms-cosmos-offer-autopilot-settings must be JSON like {"maxThroughput": 4000}.');
    return autoscaleThroughput((settings as { maxThroughput?: unknown }).maxThroughput);
  }
  return undefined;
}

export { CosmosError };
