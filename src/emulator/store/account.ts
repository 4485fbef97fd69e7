import { badRequest, CosmosError, conflict, notFound } from "../errors.js";
import type { RuMeter } from "../ru/meter.js";
import { ThroughputBudget } from "../ru/throughput.js";
import { Container, type ContainerHooks, validateId } from "./container.js";
import type { SqlitePersistence } from "./persistence.js";
import type { JsonObject, PartitionKeyDefinition, PartitionKeyRangeInfo } from "./types.js";

/** RU/s of provisioned throughput served by one physical partition when ranges are derived from throughput. */
export const RU_PER_PHYSICAL_RANGE = 10_000;
/** The service's minimum manual throughput (RU/s). */
export const MIN_THROUGHPUT = 400;

export interface Throughput {
  /** Manual RU/s, or the autoscale maximum. */
  ruPerSecond: number;
  autoscale: boolean;
}

export interface AccountOptions {
  /** Physical ranges for every new container; when unset, derived from throughput (1 per 10,000 RU/s). */
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
    readonly throughput: Throughput | undefined,
    readonly budget: ThroughputBudget | undefined,
  ) {}
}

interface SavedContainer {
  databaseId: string;
  definition: JsonObject;
  pk: PartitionKeyDefinition;
  layout: { ranges: PartitionKeyRangeInfo[]; gone: Record<string, string[]>; nextRangeId: number };
  throughput?: Throughput;
  /** LSN and document sequence high-water marks (changes below them may have been compacted away). */
  lsnFloor: number;
  docSeqFloor: number;
}

function rid(bytes: number[]): string {
  return Buffer.from(bytes).toString("base64");
}

function u32(n: number): number[] {
  return [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
}

function etagFor(seq: number): string {
  return `"${seq.toString(16).padStart(8, "0")}-0000-0000-0000-000000000000"`;
}

/** Databases and containers of the emulated account, with their throughput budgets and persistence. */
export class Account {
  readonly databases = new Map<string, CosmosDatabase>();
  private ridSeq = 0;

  constructor(readonly options: AccountOptions) {
    const p = options.persistence;
    if (p) this.load(p);
  }

  private nextSeq(): number {
    this.ridSeq++;
    this.options.persistence?.setMeta("ridSeq", String(this.ridSeq));
    return this.ridSeq;
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
      _ts: Math.floor(this.options.now() / 1000),
    };
    const db = new CosmosDatabase(id, r, resource, throughput, this.budgetFor(throughput));
    this.databases.set(id, db);
    this.options.persistence?.saveResource("database", r, "", JSON.stringify({ body: resource, throughput }));
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
    const seq = this.nextSeq();
    const r = rid([...Buffer.from(db.rid, "base64"), ...u32(seq)]);
    const definition: JsonObject = {
      id,
      indexingPolicy: body.indexingPolicy ?? {
        indexingMode: "consistent",
        automatic: true,
        includedPaths: [{ path: "/*" }],
        excludedPaths: [{ path: '/"_etag"/?' }],
      },
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
      _ts: Math.floor(this.options.now() / 1000),
      _self: `dbs/${db.rid}/colls/${r}/`,
      _etag: etagFor(seq),
      _docs: "docs/",
      _sprocs: "sprocs/",
      _triggers: "triggers/",
      _udfs: "udfs/",
      _conflicts: "conflicts/",
    };
    const rangeCount =
      rangeCountOverride ??
      this.options.rangesPerContainer ??
      Math.max(1, Math.ceil((throughput?.ruPerSecond ?? 0) / RU_PER_PHYSICAL_RANGE));
    const c = new Container(
      dbId,
      id,
      r,
      definition,
      pk,
      { rangeCount },
      this.budgetFor(throughput) ?? db.budget,
      this.hooks(),
    );
    db.containers.set(id, c);
    this.saveContainer(c, throughput);
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
    if (body.indexingPolicy !== undefined) next.indexingPolicy = body.indexingPolicy;
    if (body.changeFeedPolicy !== undefined) next.changeFeedPolicy = body.changeFeedPolicy;
    next._ts = Math.floor(this.options.now() / 1000);
    next._etag = etagFor(this.nextSeq());
    c.definition = next;
    this.saveContainer(c, this.savedThroughput.get(c));
    return c;
  }

  deleteContainer(dbId: string, id: string): void {
    const db = this.database(dbId);
    const c = this.container(dbId, id);
    db.containers.delete(id);
    this.options.persistence?.deleteContainer(c.rid);
  }

  private readonly savedThroughput = new WeakMap<Container, Throughput>();

  private budgetFor(t: Throughput | undefined): ThroughputBudget | undefined {
    return t && this.options.enforceThroughput ? new ThroughputBudget(t.ruPerSecond) : undefined;
  }

  private hooks(): ContainerHooks {
    const p = this.options.persistence;
    return {
      now: this.options.now,
      persist: p ? (c, entries) => p.appendChanges(c.rid, entries) : undefined,
      rangesChanged: (c) => this.saveContainer(c, this.savedThroughput.get(c)),
    };
  }

  saveContainer(c: Container, throughput: Throughput | undefined): void {
    if (throughput) this.savedThroughput.set(c, throughput);
    const p = this.options.persistence;
    if (!p) return;
    const db = this.database(c.databaseId);
    const saved: SavedContainer = {
      databaseId: c.databaseId,
      definition: c.definition,
      pk: c.pk,
      layout: c.layout(),
      throughput,
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
          this.saveContainer(c, this.savedThroughput.get(c));
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
    for (const r of p.loadResources("database")) {
      const saved = JSON.parse(r.json) as { body: JsonObject; throughput?: Throughput };
      const db = new CosmosDatabase(
        saved.body.id as string,
        r.rid,
        saved.body,
        saved.throughput,
        this.budgetFor(saved.throughput),
      );
      this.databases.set(db.id, db);
      dbByRid.set(r.rid, db);
    }
    for (const r of p.loadResources("container")) {
      const saved = JSON.parse(r.json) as SavedContainer;
      const db = dbByRid.get(r.parentRid);
      if (!db) continue;
      const c = new Container(
        db.id,
        saved.definition.id as string,
        r.rid,
        saved.definition,
        saved.pk,
        saved.layout,
        this.budgetFor(saved.throughput) ?? db.budget,
        this.hooks(),
      );
      if (saved.throughput) this.savedThroughput.set(c, saved.throughput);
      for (const change of p.loadChanges(r.rid)) c.restore(change);
      c.lsn = Math.max(c.lsn, saved.lsnFloor);
      c.docSeq = Math.max(c.docSeq, saved.docSeqFloor);
      db.containers.set(c.id, c);
    }
  }
}

function validateResourceId(id: unknown, what: string): void {
  if (typeof id !== "string" || id.length === 0)
    throw badRequest(`The ${what} id must be a non-empty string.`);
  validateId(id);
}

function validateDefaultTtl(ttl: unknown): void {
  if (ttl === undefined) return;
  if (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl === 0 || ttl < -1) {
    throw badRequest(
      `The defaultTtl must be -1 (on, no default expiry) or a positive integer number of seconds; got ${JSON.stringify(ttl)}.`,
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

export function parseThroughputHeaders(
  manual: string | undefined,
  autoscale: string | undefined,
): Throughput | undefined {
  if (manual !== undefined) {
    const n = Number(manual);
    if (!Number.isInteger(n) || n < MIN_THROUGHPUT) {
      throw badRequest(
        `x-ms-offer-throughput must be an integer of at least ${MIN_THROUGHPUT} RU/s; got '${manual}'.`,
      );
    }
    return { ruPerSecond: n, autoscale: false };
  }
  if (autoscale !== undefined) {
    let max: unknown;
    try {
      max = (JSON.parse(autoscale) as { maxThroughput?: unknown }).maxThroughput;
    } catch {
      throw badRequest('x-ms-cosmos-offer-autopilot-settings must be JSON like {"maxThroughput": 4000}.');
    }
    if (typeof max !== "number" || !Number.isInteger(max) || max < 1000) {
      throw badRequest("Autoscale maxThroughput must be an integer of at least 1000 RU/s.");
    }
    return { ruPerSecond: max, autoscale: true };
  }
  return undefined;
}

export { CosmosError };
