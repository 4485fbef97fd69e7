import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { MasterKeyAuth, pathSegments, signedResource, WELL_KNOWN_EMULATOR_KEY } from "./auth.js";
import { CosmosError, requestTooLarge } from "./errors.js";
import { emulatorAllowList, hostRefusal } from "./hostGuard.js";
import type { HostAllowList } from "./hosts.js";
import { createListener } from "./listener.js";
import { errorReply, send } from "./reply.js";
import { adminRoute } from "./routes/admin.js";
import { changeFeed } from "./routes/changefeed.js";
import type { Reply, RequestContext } from "./routes/context.js";
import { deleteAllItemsForPartitionKey, documentOperation, postDocuments } from "./routes/documents.js";
import { offers } from "./routes/offers.js";
import { readFeed } from "./routes/query.js";
import {
  container,
  containers,
  database,
  databases,
  methodNotAllowed,
  partitionKeyRanges,
  readAccount,
} from "./routes/resources.js";
import { ridBasedPath } from "./routes/rid-paths.js";
import { RuModel } from "./ru/charges.js";
import { RuMeter } from "./ru/meter.js";
import { Account, type CapacityMode } from "./store/account.js";
import { MAX_INITIAL_RANGES } from "./store/offers.js";
import type { SqlitePersistence } from "./store/persistence.js";

/** How often expired (TTL) documents are purged in the background (ms). */
export const DEFAULT_TTL_SWEEP_INTERVAL_MS = 1_000;
/** How long superseded versions and deletes stay readable in the all-versions-and-deletes feed (ms). */
export const DEFAULT_CHANGE_FEED_RETENTION_MS = 10 * 60 * 1000;
/** Largest request body accepted (bytes): the 2 MB item limit plus room for a batch's envelope. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** Options of `startEmulator`: where it listens, its key, TLS, persistence and throughput model. */
export interface EmulatorOptions {
  /** TCP port; 0 picks a free one. Default 8081. */
  port?: number;
  /** Interface to bind. Default 127.0.0.1. */
  host?: string;
  /** Account key (base64). Default: the well-known emulator key. */
  key?: string;
  /** Persist to SQLite in this directory; in memory when absent. */
  dataDir?: string;
  /** "full" adds fsync per commit (survives power loss); "normal" survives process crashes. */
  durability?: "normal" | "full";
  /** Physical ranges per new container; default: derived from throughput as the service does. */
  rangesPerContainer?: number;
  /** Answer 429 when a container's provisioned RU/s is exceeded. Default true. */
  enforceThroughput?: boolean;
  /**
   * "provisioned" (default: offers of RU/s, as the Windows and Linux emulators) or "serverless", as an Azure account
   * created with the EnableServerless capability: creating a database or container with throughput and the offers
   * API answer the service's 400s, and each container serves up to 5,000 RU/s per physical partition.
   */
  capacityMode?: CapacityMode;
  /** Background TTL purge period (ms). */
  ttlSweepIntervalMs?: number;
  /** Retention of the all-versions-and-deletes history (ms). */
  changeFeedRetentionMs?: number;
  /**
   * Serve HTTPS with this certificate and key (PEM file paths); with `http: true` plain HTTP is answered on the
   * same port too (what `cosmos-feed start` serves). The endpoint is https:// either way.
   */
  tls?: { certFile: string; keyFile: string; http?: boolean };
  /**
   * Host names answered besides loopback ones and the bound address (comma-separated, `*.domain`, `*` for any):
   * the DNS-rebinding guard (hostGuard.ts). Requests naming another host get 421.
   */
  allowedHosts?: string;
  /** Log each request to stderr. */
  log?: boolean;
  /**
   * The wall clock (ms since the epoch) of documents' `_ts` and their TTL expiry; `Date.now` by default. Tests pass
   * a clock they move by hand, so that an expiry happens exactly when they say (request signatures are still
   * checked against the real time).
   */
  now?: () => number;
  /**
   * The monotonic clock (ms) provisioned-throughput budgets refill by; `performance.now` by default. Tests stop it,
   * so that a burst falls within one second of budget however slowly a loaded machine serves it.
   */
  throughputClock?: () => number;
}

/** Why the emulator could not start: `code` says which setting to change, the message how. */
export class EmulatorStartError extends CosmosFeedError {
  /** Which setting to change: the port (in use, or listen failed), the data folder, or another option. */
  declare readonly code: "PORT_IN_USE" | "LISTEN_FAILED" | "DATA_DIR_UNUSABLE" | "INVALID_OPTION";
  constructor(
    code: "PORT_IN_USE" | "LISTEN_FAILED" | "DATA_DIR_UNUSABLE" | "INVALID_OPTION",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, { code, cause: options?.cause });
  }
}

/** A started emulator: how to reach it, its RU meter, test controls, and `close()`. */
export interface RunningEmulator {
  /** The endpoint clients use, e.g. `http://127.0.0.1:8081/`. */
  endpoint: string;
  /** The account key (base64). */
  key: string;
  /** `AccountEndpoint=…;AccountKey=…;`: what a CosmosClient or a Functions app setting takes. */
  connectionString: string;
  /** The TCP port it listens on (the one picked when port 0 was asked for). */
  port: number;
  /** When serving HTTPS: the certificate clients must trust (PEM), its file, and whether HTTP is answered too. */
  tls?: { certFile: string; certPem: string; http: boolean };
  /**
   * The emulator's store, for this repository's tests to inspect.
   * @internal Not part of the package's API: stripped from its .d.ts (`stripInternal`).
   */
  account: Account;
  /** Request units charged, per container and kind of operation. */
  meter: RuMeter;
  /** Splits a live partition key range; requests naming it then get 410/1002. Returns the children's ids. */
  splitRange(databaseId: string, containerId: string, rangeId: string): string[];
  /** Merges two adjacent live ranges (left first); both ids then get 410/1002. Returns the merged range's id. */
  mergeRanges(databaseId: string, containerId: string, leftId: string, rightId: string): string;
  /** Purges expired documents now (the background sweeper does it every ttlSweepIntervalMs). */
  purgeExpired(): number;
  /** Stops the TTL sweeper and the listener, and closes the data folder's database when it persists. */
  close(): Promise<void>;
}

/** Starts the embedded Cosmos DB (NoSQL) emulator and resolves once it listens. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const key = options.key ?? WELL_KNOWN_EMULATOR_KEY;
  let allowList: HostAllowList;
  try {
    allowList = emulatorAllowList(options.host ?? "127.0.0.1", options.allowedHosts);
  } catch (e) {
    throw new EmulatorStartError("INVALID_OPTION", (e as Error).message, { cause: e });
  }
  let certPem: string | undefined;
  let tlsKey: Buffer | undefined;
  if (options.tls) {
    try {
      certPem = readFileSync(options.tls.certFile, "utf8");
      tlsKey = readFileSync(options.tls.keyFile);
    } catch (e) {
      throw new EmulatorStartError(
        "INVALID_OPTION",
        `Cannot read the TLS certificate or key (${(e as Error).message}).`,
        { cause: e },
      );
    }
  }
  const mode = options.capacityMode;
  if (mode !== undefined && mode !== "provisioned" && mode !== "serverless") {
    throw new EmulatorStartError(
      "INVALID_OPTION",
      `capacityMode must be 'provisioned' or 'serverless'; got ${JSON.stringify(mode)}.`,
    );
  }
  const ranges = options.rangesPerContainer;
  if (ranges !== undefined && (!Number.isInteger(ranges) || ranges < 1 || ranges > MAX_INITIAL_RANGES)) {
    throw new EmulatorStartError(
      "INVALID_OPTION",
      `rangesPerContainer must be an integer from 1 to ${MAX_INITIAL_RANGES}; got ${String(ranges)}.`,
    );
  }
  const auth = new MasterKeyAuth(key);
  const meter = new RuMeter();
  // Loaded only when persisting: the in-memory emulator needs no native module.
  let persistence: SqlitePersistence | undefined;
  let account: Account;
  try {
    if (options.dataDir) {
      const sqlite = await import("./store/persistence.js");
      persistence = new sqlite.SqlitePersistence(options.dataDir, options.durability);
    }
    account = new Account({
      rangesPerContainer: options.rangesPerContainer,
      capacityMode: options.capacityMode ?? "provisioned",
      enforceThroughput: options.enforceThroughput ?? true,
      meter,
      persistence,
      now: options.now ?? Date.now,
      throughputClock: options.throughputClock,
    });
  } catch (e) {
    persistence?.close();
    const reason = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    // A native module built for another Node.js (its ABI) is not the directory's fault: say what fixes it.
    const fix =
      reason === "ERR_DLOPEN_FAILED"
        ? `better-sqlite3's native module does not load in Node.js ${process.version}: run \`npm rebuild better-sqlite3\` with this Node.js`
        : "it must be a directory this process can create and write";
    throw new EmulatorStartError(
      "DATA_DIR_UNUSABLE",
      `Cannot keep data in '${options.dataDir}' (${reason}): ${fix} (or leave --data-dir out to run in memory).`,
      { cause: e },
    );
  }
  const scheme = options.tls ? "https" : "http";
  const retentionMs = options.changeFeedRetentionMs ?? DEFAULT_CHANGE_FEED_RETENTION_MS;

  const purgeExpired = (): number => {
    let n = 0;
    for (const c of account.allContainers()) n += c.purgeExpired();
    return n;
  };
  let ticks = 0;
  const sweepMs = options.ttlSweepIntervalMs ?? DEFAULT_TTL_SWEEP_INTERVAL_MS;
  const sweeper = setInterval(() => {
    try {
      purgeExpired();
      // Compaction walks whole logs: do it every ~10 sweeps.
      if (++ticks % 10 === 0) account.compact(retentionMs);
    } catch (e) {
      console.error("emulator: background sweep failed:", e);
    }
  }, sweepMs);
  sweeper.unref();

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on("end", () => {
      const activityId = randomUUID();
      void answer(req, res, activityId, () => {
        // First of all: a request for a foreign host name (DNS rebinding) reads and writes nothing.
        const refused = hostRefusal(req.headers.host, allowList);
        if (refused) throw refused;
        if (tooLarge) {
          throw requestTooLarge(`The request body is over the limit of ${MAX_REQUEST_BYTES} bytes.`);
        }
        const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        // The account's locations name the scheme this request came in with (HTTP and HTTPS may share the port).
        const requestScheme = "encrypted" in req.socket && req.socket.encrypted ? "https" : "http";
        return dispatch(req, body, activityId, requestScheme, account, auth, meter, {
          purgeExpired,
          retentionMs,
        });
      });
    });
  };

  /**
   * Runs one request's handler and sends its reply. The one guard around the whole request: nothing a
   * handler or the send path throws (or rejects with) may end the process.
   */
  const answer = async (
    req: IncomingMessage,
    res: ServerResponse,
    activityId: string,
    run: () => Reply | Promise<Reply>,
  ): Promise<void> => {
    let reply: Reply;
    try {
      reply = await run();
    } catch (e) {
      reply = errorReply(e, activityId);
    }
    try {
      send(res, reply, activityId);
    } catch (e) {
      console.error("emulator: could not send a reply:", e);
      try {
        if (!res.headersSent) send(res, errorReply(e, activityId), activityId);
        else res.destroy();
      } catch {
        res.destroy();
      }
    }
    if (options.log) console.error(`${req.method} ${req.url} -> ${reply.status}`);
  };

  const listener = createListener(
    handler,
    certPem !== undefined && tlsKey ? { cert: certPem, key: tlsKey, http: options.tls?.http } : undefined,
  );
  const server = listener.server;
  const wantedPort = options.port ?? 8081;
  const wantedHost = options.host ?? "127.0.0.1";
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(wantedPort, wantedHost, () => resolve());
    });
  } catch (e) {
    clearInterval(sweeper);
    persistence?.close();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") {
      throw new EmulatorStartError(
        "PORT_IN_USE",
        `Port ${wantedPort} on ${wantedHost} is already in use; choose another with --port <n> (or --port 0 for any free port).`,
        { cause: e },
      );
    }
    throw new EmulatorStartError(
      "LISTEN_FAILED",
      `Cannot listen on ${wantedHost}:${wantedPort} (${code ?? (e as Error).message}).`,
      { cause: e },
    );
  }
  const port = (server.address() as AddressInfo).port;
  const bound = options.host ?? "127.0.0.1";
  const host = ["0.0.0.0", "::", "[::]"].includes(bound)
    ? "127.0.0.1"
    : bound.includes(":") && !bound.startsWith("[")
      ? `[${bound}]`
      : bound;
  const endpoint = `${scheme}://${host}:${port}/`;
  return {
    endpoint,
    key,
    connectionString: `AccountEndpoint=${endpoint};AccountKey=${key};`,
    port,
    ...(options.tls && certPem !== undefined
      ? { tls: { certFile: options.tls.certFile, certPem, http: options.tls.http === true } }
      : {}),
    account,
    meter,
    splitRange: (db, coll, rangeId) =>
      account
        .container(db, coll)
        .splitRange(rangeId)
        .map((r) => r.id),
    mergeRanges: (db, coll, leftId, rightId) => account.container(db, coll).mergeRanges(leftId, rightId).id,
    purgeExpired,
    close: async () => {
      clearInterval(sweeper);
      await listener.close();
      persistence?.close();
    },
  };
}

export interface AdminHooks {
  purgeExpired(): number;
  retentionMs: number;
}

function dispatch(
  req: IncomingMessage,
  body: Buffer,
  activityId: string,
  scheme: string,
  account: Account,
  auth: MasterKeyAuth,
  meter: RuMeter,
  admin: AdminHooks,
): Reply | Promise<Reply> {
  const requested = pathSegments(req.url ?? "/");
  const byRid = ridBasedPath(account, requested);
  const segments = byRid?.segments ?? requested;
  const method = req.method ?? "GET";
  const headers = req.headers;
  const resource = byRid?.signed ?? signedResource(segments);
  auth.verify(
    method,
    resource.type,
    resource.id,
    headers.authorization,
    (headers["x-ms-date"] as string | undefined) ?? headers.date,
  );
  const ctx: RequestContext = {
    method,
    segments,
    headers,
    body,
    origin: `${scheme}://${headers.host ?? "127.0.0.1"}/`,
    account,
    activityId,
    byRid: byRid !== undefined,
  };
  const n = segments.length;
  if (n === 0) return readAccount(ctx);
  if (segments[0] === "_emulator") return adminRoute(ctx, meter, admin);
  if (segments[0] === "offers") return offers(ctx);
  if (segments[0] !== "dbs") {
    throw new CosmosError(
      400,
      "BadRequest",
      `Resource type '${segments[0]}' is not supported by this emulator.`,
    );
  }
  if (n === 1) return databases(ctx);
  if (n === 2) return database(ctx, segments[1]);
  if (segments[2] !== "colls") throw unsupported(segments[2]);
  if (n === 3) return containers(ctx, segments[1]);
  if (n === 4) return container(ctx, segments[1], segments[3]);
  const c = account.container(segments[1], segments[3]);
  const feed = segments[4];
  if (feed === "pkranges" && n === 5) {
    if (method !== "GET") throw methodNotAllowed(ctx);
    return partitionKeyRanges(ctx, c);
  }
  // POST dbs/{db}/colls/{c}/operations/partitionkeydelete: container.deleteAllItemsForPartitionKey.
  const partitionKeyDelete = feed === "operations" && n === 6 && segments[5] === "partitionkeydelete";
  if ((feed !== "docs" && !partitionKeyDelete) || n > 6) throw unsupported(feed);

  // Data plane: admitted against the provisioned throughput, then charged and metered.
  const budget = c.budget;
  if (budget) {
    try {
      budget.admit();
    } catch (e) {
      meter.recordThrottled(c.meterName, kindGuess(method, n));
      throw e;
    }
  }
  const failed = (e: unknown): never => {
    // The service charges failed requests too (a 409 or 412 still costs RU).
    if (e instanceof CosmosError) {
      e.charge = RuModel.failedRequest;
      budget?.charge(e.charge);
      meter.record(c.meterName, kindGuess(method, n), e.charge);
    }
    throw e;
  };
  const charged = (reply: Reply): Reply => {
    const charge = reply.charge ?? 0;
    budget?.charge(charge);
    meter.record(c.meterName, reply.kind ?? "metadata", charge);
    return reply;
  };
  let reply: Reply | Promise<Reply>;
  try {
    if (partitionKeyDelete) {
      if (method !== "POST") throw methodNotAllowed(ctx);
      reply = deleteAllItemsForPartitionKey(ctx, c);
    } else if (n === 5) {
      if (method === "POST") reply = postDocuments(ctx, c);
      else if (method === "GET") {
        const aim = headers["a-im"] as string | undefined;
        reply = aim ? changeFeed(ctx, c, aim) : readFeed(ctx, c);
      } else throw methodNotAllowed(ctx);
    } else {
      reply = documentOperation(ctx, c, segments[5]);
    }
  } catch (e) {
    return failed(e);
  }
  // A handler may answer later (work moved off the event loop); it is charged the same way.
  return reply instanceof Promise ? reply.then(charged, failed) : charged(reply);
}

function kindGuess(method: string, n: number) {
  if (n === 5) return method === "GET" ? ("changeFeed" as const) : ("create" as const);
  return method === "GET"
    ? ("read" as const)
    : method === "DELETE"
      ? ("delete" as const)
      : ("replace" as const);
}

function unsupported(what: string): CosmosError {
  return new CosmosError(
    400,
    "BadRequest",
    `'${what}' resources (stored procedures, triggers, UDFs, users and permissions, conflicts, client encryption keys) are not supported by this emulator.`,
  );
}
