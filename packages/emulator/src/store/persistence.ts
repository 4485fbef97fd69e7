import { join } from "node:path";
import Database from "better-sqlite3";
import { ensureDirectory } from "./directory.js";
import type { ChangeOp, LogEntry } from "./types.js";

/** A database or container resource as saved: its JSON and its place in the account. */
export interface SavedResource {
  rid: string;
  parentRid: string;
  json: string;
}

/** A change as saved: enough to rebuild the document, the logs and the feeds. */
export interface SavedChange {
  /** The container-wide commit sequence number (the row's key). */
  seq: number;
  /** The LSN its range gave it. */
  lsn: number;
  op: ChangeOp;
  json: string;
  atMs: number;
  previousLsn: number;
  ttlExpired: boolean;
}

/**
 * Durable storage in SQLite (better-sqlite3, WAL journal). Every change is written in the same synchronous
 * transaction that acknowledges it, before the HTTP response, so an acknowledged write survives `kill -9`.
 * `synchronous=NORMAL` in WAL mode is durable against process crashes (not against power loss; set
 * `durability: "full"` for that).
 */
export class SqlitePersistence {
  private readonly db: Database.Database;
  private readonly insertChange: Database.Statement;
  private readonly deleteChange: Database.Statement;
  private readonly putResource: Database.Statement;
  private readonly delResource: Database.Statement;
  private readonly delChanges: Database.Statement;
  private readonly putMeta: Database.Statement;

  constructor(dataDir: string, durability: "normal" | "full" = "normal") {
    ensureDirectory(dataDir);
    this.db = new Database(join(dataDir, "cosmos-emulator.sqlite"));
    this.db.pragma("journal_mode = WAL");
    this.db.pragma(`synchronous = ${durability === "full" ? "FULL" : "NORMAL"}`);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS resources (rid TEXT PRIMARY KEY, kind TEXT NOT NULL, parent_rid TEXT NOT NULL, json TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS changes (
        coll_rid TEXT NOT NULL, seq INTEGER NOT NULL, op INTEGER NOT NULL, json TEXT NOT NULL,
        at_ms INTEGER NOT NULL, previous_lsn INTEGER NOT NULL, ttl_expired INTEGER NOT NULL, lsn INTEGER NOT NULL,
        PRIMARY KEY (coll_rid, seq)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    `);
    this.migrateContainerLsn();
    this.insertChange = this.db.prepare(
      "INSERT INTO changes (coll_rid, seq, lsn, op, json, at_ms, previous_lsn, ttl_expired) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.deleteChange = this.db.prepare("DELETE FROM changes WHERE coll_rid = ? AND seq = ?");
    this.putResource = this.db.prepare(
      "INSERT INTO resources (rid, kind, parent_rid, json) VALUES (?, ?, ?, ?) ON CONFLICT(rid) DO UPDATE SET json = excluded.json",
    );
    this.delResource = this.db.prepare("DELETE FROM resources WHERE rid = ? OR parent_rid = ?");
    this.delChanges = this.db.prepare("DELETE FROM changes WHERE coll_rid = ?");
    this.putMeta = this.db.prepare(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    );
  }

  /**
   * A data folder written before each range counted its own LSNs keyed changes by a container-wide `lsn`: that
   * number becomes the change's commit sequence and stays its LSN (so `_lsn`s, etags and saved continuations keep
   * their meaning); the account then starts every range's own counter at the container's old LSN.
   */
  private migrateContainerLsn(): void {
    const columns = this.db.prepare("PRAGMA table_info(changes)").all() as { name: string }[];
    if (columns.some((c) => c.name === "seq")) return;
    this.db.transaction(() => {
      this.db.exec("ALTER TABLE changes RENAME COLUMN lsn TO seq");
      this.db.exec("ALTER TABLE changes ADD COLUMN lsn INTEGER NOT NULL DEFAULT 0");
      this.db.exec("UPDATE changes SET lsn = seq");
    })();
  }

  appendChanges(collRid: string, entries: readonly LogEntry[]): void {
    if (entries.length === 1) {
      this.insertOne(collRid, entries[0]);
      return;
    }
    this.db.transaction(() => {
      for (const e of entries) this.insertOne(collRid, e);
    })();
  }

  private insertOne(collRid: string, e: LogEntry): void {
    this.insertChange.run(
      collRid,
      e.seq,
      e.lsn,
      e.op,
      e.doc.json,
      e.atMs,
      e.previousLsn,
      e.ttlExpired ? 1 : 0,
    );
  }

  /** Deletes saved changes by commit sequence number. */
  pruneChanges(collRid: string, seqs: readonly number[]): void {
    if (seqs.length === 0) return;
    this.db.transaction(() => {
      for (const seq of seqs) this.deleteChange.run(collRid, seq);
    })();
  }

  saveResource(kind: "database" | "container", rid: string, parentRid: string, json: string): void {
    this.putResource.run(rid, kind, parentRid, json);
  }

  deleteDatabase(rid: string, containerRids: readonly string[]): void {
    this.db.transaction(() => {
      for (const c of containerRids) this.delChanges.run(c);
      this.delResource.run(rid, rid);
    })();
  }

  deleteContainer(rid: string): void {
    this.db.transaction(() => {
      this.delChanges.run(rid);
      this.delResource.run(rid, "\u0000none");
    })();
  }

  setMeta(key: string, value: string): void {
    this.putMeta.run(key, value);
  }

  getMeta(key: string): string | undefined {
    return (this.db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | undefined)
      ?.value;
  }

  loadResources(kind: "database" | "container"): SavedResource[] {
    return this.db
      .prepare("SELECT rid, parent_rid AS parentRid, json FROM resources WHERE kind = ? ORDER BY rowid")
      .all(kind) as SavedResource[];
  }

  *loadChanges(collRid: string): Generator<SavedChange> {
    const rows = this.db
      .prepare(
        "SELECT seq, lsn, op, json, at_ms AS atMs, previous_lsn AS previousLsn, ttl_expired AS ttlExpired FROM changes WHERE coll_rid = ? ORDER BY seq",
      )
      .iterate(collRid) as Iterable<{
      seq: number;
      lsn: number;
      op: number;
      json: string;
      atMs: number;
      previousLsn: number;
      ttlExpired: number;
    }>;
    for (const r of rows) yield { ...r, op: r.op as ChangeOp, ttlExpired: r.ttlExpired === 1 };
  }

  close(): void {
    this.db.close();
  }
}
