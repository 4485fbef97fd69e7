import type { Container } from "@azure/cosmos";
import { changeFeedCharge, pointReadCharge, queryCharge, RuModel, writeCharge } from "@cosmos-feed/emulator";
import type { HostClock, SimClock } from "./sim-clock.js";

/**
 * An in-memory lease container with the service's semantics for what a change feed processor does to it: documents
 * with `_etag`, `_ts`, `_lsn`; create (409 when the id exists), point read (404 answered, not thrown), replace and
 * delete with If-Match (412) or on a missing document (404); the STARTSWITH(c.id) query; the latest-version change
 * feed (each changed document once, at its latest version, in LSN order; 304 when nothing changed). Every request
 * costs what the emulator's charge model says (@cosmos-feed/emulator), a failed one RuModel.failedRequest, and takes
 * a seeded latency; with `lossRate`, a request is lost (never answered, as a dropped connection). Only the narrow
 * surface of `@azure/cosmos`'s Container that the lease store and the .NET model use is there.
 */

/** The lean lease container indexes only `id` and `_ts` (docs/tuning.md): a write indexes two paths. */
const INDEXED_PATHS = 2;

export interface LeaseContainerOptions {
  /** Seeded [0, 1) source for latency and loss. */
  random: () => number;
  /** One-way network latency range of a request (ms). */
  latencyMs: { min: number; max: number };
  /** Probability that a request is never answered (0 = none). */
  lossRate?: number;
}

/** Requests and RU by kind, as the service meters them (failed requests included). */
export class ServerMeter {
  readonly requests: Record<string, number> = {};
  readonly ru: Record<string, number> = {};
  add(kind: string, ru: number): void {
    this.requests[kind] = (this.requests[kind] ?? 0) + 1;
    this.ru[kind] = (this.ru[kind] ?? 0) + ru;
  }
  /** Requests and RU by kind, as of now (a copy). */
  snapshot(): Record<string, { requests: number; ru: number }> {
    return Object.fromEntries(
      Object.keys(this.requests).map((k) => [k, { requests: this.requests[k], ru: this.ru[k] }]),
    );
  }
  totals(): { requests: number; ru: number } {
    const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
    return { requests: sum(this.requests), ru: sum(this.ru) };
  }
}

interface Stored {
  body: Record<string, unknown>;
  lsn: number;
  bytes: number;
  /** Replaced by a later version or deleted: no longer in the change feed. */
  superseded?: true;
}

/** The fleet signal's requests are metered apart ("fleet-read", "fleet-replace"): the figures say what it costs. */
function meterKind(kind: string, id: string): string {
  return id.endsWith(".fleet") ? `fleet-${kind}` : kind;
}

/** The service's error as the SDK throws it (`code` is the HTTP status). */
function cosmosError(code: number): Error {
  return Object.assign(new Error(`Simulated lease container: ${code}`), { code });
}

/**
 * Freezes a stored document and what it holds: reads hand out the stored object itself instead of a copy of every
 * document per listing (hosts × leases copies per acquire interval), so a caller that modified one would change
 * the store; frozen, that throws instead (ES modules are strict).
 */
function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

function abortError(): Error {
  return Object.assign(new Error("The operation was aborted."), { name: "AbortError" });
}

export class InMemoryLeaseContainer {
  readonly meter = new ServerMeter();
  private readonly docs = new Map<string, Stored>();
  /**
   * Every version written, in LSN order, superseded ones marked (dropped once they are most of it): a feed read
   * finds where it starts by binary search instead of walking every document, as it did (O(leases) per read).
   */
  private log: Stored[] = [];
  private superseded = 0;
  private lsn = 0;
  /** Sees every write as the service applies it (the document before, and after; undefined: none). */
  observer:
    | ((before: Record<string, unknown> | undefined, after: Record<string, unknown> | undefined) => void)
    | undefined;

  constructor(
    private readonly sim: SimClock,
    private readonly o: LeaseContainerOptions,
  ) {}

  /** The store's truth: every document's body (for the driver's checks). */
  documents(): IterableIterator<Record<string, unknown>> {
    const it = this.docs.values();
    return (function* () {
      for (const d of it) yield d.body;
    })();
  }

  get(id: string): Record<string, unknown> | undefined {
    return this.docs.get(id)?.body;
  }

  /** A `Container` as one host's SDK client sees it: requests travel on that host's clock (paused with it). */
  forHost(clock: HostClock): Container {
    return new HostView(this, clock) as unknown as Container;
  }

  /**
   * Runs one request: it reaches the service after a one-way latency (on the network's time, so it lands even if
   * the sender is paused meanwhile), `serve` runs there, and the answer comes back after another latency on the
   * sender's clock. Lost requests never answer; an abort rejects at once with the SDK's AbortError.
   */
  async request<T>(clock: HostClock, signal: AbortSignal | undefined, serve: () => T): Promise<T> {
    if (signal?.aborted) throw abortError();
    const lost = (this.o.lossRate ?? 0) > 0 && this.o.random() < (this.o.lossRate ?? 0);
    await this.sim.schedule(this.oneWay(), undefined);
    let outcome: { ok: T } | { error: unknown };
    try {
      outcome = { ok: serve() };
    } catch (error) {
      outcome = { error };
    }
    // The same promise chain with or without a signal (the order answers land in is the simulation's): only the
    // listener is left out when there is nothing to listen to.
    await new Promise<void>((resolve, reject) => {
      if (!signal) {
        if (lost) return; // answered never: the caller's own timeout ends it
        void clock.sleep(this.oneWay()).then(() => resolve());
        return;
      }
      const onAbort = () => reject(abortError());
      signal.addEventListener("abort", onAbort, { once: true });
      if (lost) return; // answered only by the caller's own timeout / abort
      void clock.sleep(this.oneWay()).then(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      });
    });
    if ("error" in outcome) throw outcome.error;
    return outcome.ok;
  }

  /** One seeded one-way latency (ms). */
  private oneWay(): number {
    const { min, max } = this.o.latencyMs;
    return min + this.o.random() * (max - min);
  }

  // ------------------------------------------------------------------ the service side (run at arrival)

  private stamp(id: string, body: Record<string, unknown>): Record<string, unknown> {
    const before = this.docs.get(id)?.body;
    this.lsn++;
    const json = JSON.stringify({
      ...body,
      id,
      _etag: `"${this.lsn.toString(16).padStart(8, "0")}"`,
      _ts: Math.floor(this.sim.now() / 1000),
      _lsn: this.lsn,
      _rid: "bGVhc2VzAA==",
      _self: `dbs/x/colls/leases/docs/${id}`,
      _attachments: "attachments/",
    });
    const bytes = json.length;
    // What the service stores is what the SDK sent, serialized: nothing the writer keeps is shared with the store.
    const stored = deepFreeze(JSON.parse(json) as Record<string, unknown>);
    const old = this.docs.get(id);
    if (old) this.supersede(old);
    this.docs.delete(id); // re-inserted last: the map's order is LSN order (the change feed's)
    const entry: Stored = { body: stored, lsn: this.lsn, bytes };
    this.docs.set(id, entry);
    this.log.push(entry);
    this.observer?.(before, stored);
    return stored;
  }

  private fail(kind: string, code: number): never {
    this.meter.add(kind, RuModel.failedRequest);
    throw cosmosError(code);
  }

  create(body: Record<string, unknown>) {
    const id = String(body.id);
    if (this.docs.has(id)) this.fail("create", 409);
    return this.write("create", id, body, 201);
  }

  read(id: string) {
    const d = this.docs.get(id);
    const kind = meterKind("read", id);
    if (!d) {
      this.meter.add(kind, RuModel.failedRequest);
      return { resource: undefined, statusCode: 404, requestCharge: RuModel.failedRequest, headers: {} };
    }
    const charge = pointReadCharge(d.bytes);
    this.meter.add(kind, charge);
    return {
      resource: d.body,
      statusCode: 200,
      requestCharge: charge,
      etag: d.body._etag,
      headers: this.session(),
    };
  }

  replace(id: string, body: Record<string, unknown>, ifMatch: string | undefined) {
    const d = this.docs.get(id);
    if (!d) this.fail(meterKind("replace", id), 404);
    if (ifMatch !== undefined && d.body._etag !== ifMatch) this.fail(meterKind("replace", id), 412);
    return this.write("replace", id, body, 200);
  }

  /** Stores the body under a new ETag and `_ts`, charged as the emulator charges a write of its size. */
  private write(kind: "create" | "replace", id: string, body: Record<string, unknown>, statusCode: number) {
    const stored = this.stamp(id, body);
    const charge = writeCharge(this.docs.get(id)?.bytes ?? 0, INDEXED_PATHS);
    this.meter.add(meterKind(kind, id), charge);
    return {
      resource: stored,
      requestCharge: charge,
      etag: stored._etag,
      headers: this.session(),
      statusCode,
    };
  }

  delete(id: string, ifMatch: string | undefined) {
    const d = this.docs.get(id);
    if (!d) this.fail("delete", 404);
    if (ifMatch !== undefined && d.body._etag !== ifMatch) this.fail("delete", 412);
    this.docs.delete(id);
    this.supersede(d);
    this.lsn++;
    this.observer?.(d.body, undefined);
    const charge = writeCharge(d.bytes, INDEXED_PATHS);
    this.meter.add("delete", charge);
    return { requestCharge: charge, statusCode: 204, headers: this.session() };
  }

  /** `SELECT * FROM c WHERE STARTSWITH(c.id, @prefix)`: one page (the id index finds the matches). */
  queryPrefix(prefix: string) {
    const out: Record<string, unknown>[] = [];
    let bytes = 0;
    // Values, not entries: no [id, doc] pair allocated per document per listing (the id is the body's).
    for (const d of this.docs.values()) {
      if ((d.body.id as string).startsWith(prefix)) {
        out.push(d.body);
        bytes += d.bytes;
      }
    }
    const charge = queryCharge(out.length, bytes);
    this.meter.add("query", charge);
    return { resources: out, requestCharge: charge };
  }

  private supersede(d: Stored): void {
    d.superseded = true;
    this.superseded++;
    if (this.superseded < 1024 || this.superseded * 2 < this.log.length) return;
    this.log = this.log.filter((e) => !e.superseded);
    this.superseded = 0;
  }

  /** The change feed after `fromLsn`: up to `max` documents, latest versions in LSN order. */
  feed(fromLsn: number, max: number) {
    const out: Record<string, unknown>[] = [];
    let last = fromLsn;
    const log = this.log;
    // The first version after fromLsn (the log is in LSN order).
    let lo = 0;
    let hi = log.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (log[mid].lsn <= fromLsn) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < log.length; i++) {
      const d = log[i];
      if (d.superseded) continue;
      if (out.length >= max) break;
      out.push(d.body);
      last = d.lsn;
    }
    const charge = changeFeedCharge(out.length);
    this.meter.add("feed", charge);
    return { result: out, lsn: out.length === 0 ? Math.max(fromLsn, 0) : last, requestCharge: charge };
  }

  /** The container's current LSN (where a feed "from now" starts). */
  currentLsn(): number {
    return this.lsn;
  }

  private session() {
    return { "x-ms-session-token": `0:-1#${this.lsn}` };
  }
}

type Opts = { abortSignal?: AbortSignal; accessCondition?: { type: string; condition: string } } | undefined;

/** `container.item(id)`: its methods on the prototype, not three closures made per call (one per lease write). */
class ItemView {
  constructor(
    private readonly c: InMemoryLeaseContainer,
    private readonly clock: HostClock,
    private readonly id: string,
  ) {}
  read(o: Opts) {
    return this.c.request(this.clock, o?.abortSignal, () => this.c.read(this.id));
  }
  replace(body: Record<string, unknown>, o: Opts) {
    return this.c.request(this.clock, o?.abortSignal, () =>
      this.c.replace(this.id, body, o?.accessCondition?.condition),
    );
  }
  delete(o: Opts) {
    return this.c.request(this.clock, o?.abortSignal, () =>
      this.c.delete(this.id, o?.accessCondition?.condition),
    );
  }
}

/** One host's SDK-shaped handle on the container. */
class HostView {
  readonly id = "leases";
  readonly items: unknown;

  constructor(
    private readonly c: InMemoryLeaseContainer,
    private readonly clock: HostClock,
  ) {
    this.items = {
      create: (body: Record<string, unknown>, o: Opts) =>
        c.request(clock, o?.abortSignal, () => c.create(body)),
      query: (spec: { parameters: { value: string }[] }, o: Opts) => {
        let done = false;
        return {
          hasMoreResults: () => !done,
          fetchNext: async () => {
            const page = await c.request(clock, o?.abortSignal, () =>
              c.queryPrefix(spec.parameters[0].value),
            );
            done = true;
            return page;
          },
        };
      },
      getChangeFeedIterator: (o: { maxItemCount?: number }) => this.feedIterator(o.maxItemCount ?? 100),
    };
  }

  read() {
    return Promise.resolve({
      resource: { id: this.id, partitionKey: { paths: ["/id"] }, defaultTtl: -1 },
    });
  }

  item(id: string): ItemView {
    return new ItemView(this.c, this.clock, id);
  }

  /** From now: the first read pins the start (304), as ChangeFeedStartFrom.Now(). */
  private feedIterator(max: number) {
    const c = this.c;
    const clock = this.clock;
    let from: number | undefined;
    return {
      hasMoreResults: true,
      readNext: () =>
        c
          .request(clock, undefined, () => {
            if (from === undefined) {
              from = c.currentLsn();
              return c.feed(from, 0);
            }
            const page = c.feed(from, max);
            from = page.lsn;
            return page;
          })
          .then((page) => ({
            result: page.result,
            statusCode: page.result.length === 0 ? 304 : 200,
            requestCharge: page.requestCharge,
            continuationToken: String(page.lsn),
            headers: {},
          })),
    };
  }
}
