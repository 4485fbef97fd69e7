import { ChangeFeedStartFrom, type Container, type ItemDefinition } from "@azure/cosmos";
import { NotFoundError, PreconditionFailedError, statusOf } from "@cosmos-feed/core/cosmos/errors";
import { deleteIfMatch, replaceIfMatch } from "@cosmos-feed/core/cosmos/occ";
import { defaultOccRetryPolicy, OccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";
import { sessionTokenLsn } from "@cosmos-feed/core/cosmos/session";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { fleetSignalDocumentId } from "./ids.js";
import { infoDocumentId, type Lease, lockDocumentId, parseLease, toLeaseDocument } from "./lease.js";

/** Why a lease was lost. */
export type LeaseLostReason =
  | "stolen"
  | "gone"
  | "released"
  | "conflict"
  | "retries-exhausted"
  /** This host's local deadline passed without a successful write (it gave the lease up itself). */
  | "expired";

/** The lease is no longer ours (another owner, deleted by a split, or expired and taken). */
export class LeaseLostError extends CosmosFeedError {
  constructor(
    /** The lost lease's token. */
    readonly leaseToken: string,
    /** How it was lost. */
    readonly reason: LeaseLostReason,
    /** The owner it has now, when known (null: none). */
    readonly newOwner?: string | null,
  ) {
    super(`Lease ${leaseToken} was lost (${reason}${newOwner ? `: now owned by ${newOwner}` : ""}).`, {
      statusCode: 412,
    });
  }
}

/** Lease-container operations by kind, counted as requests (for the RU tuner and the benchmark). */
export const LEASE_OPERATION_KINDS = ["query", "read", "create", "replace", "delete", "feed"] as const;
/** One kind of lease-container request. */
export type LeaseOperationKind = (typeof LEASE_OPERATION_KINDS)[number];

const zeroPerKind = (): Record<LeaseOperationKind, number> =>
  Object.fromEntries(LEASE_OPERATION_KINDS.map((k) => [k, 0])) as Record<LeaseOperationKind, number>;

/** Requests to the lease container and their cost, per kind of operation. */
export class LeaseOperationCounters {
  /** Requests per kind. */
  readonly count = zeroPerKind();
  /** Request charge per kind (RU). */
  readonly requestCharge = zeroPerKind();

  /** Counts `requests` requests of `kind` costing `charge` RU in all. */
  add(kind: LeaseOperationKind, charge: number | undefined, requests = 1): void {
    this.count[kind] += requests;
    this.requestCharge[kind] += charge ?? 0;
  }

  /** Requests of every kind. */
  total(): number {
    return Object.values(this.count).reduce((a, b) => a + b, 0);
  }
}

/** Documents per page when following the lease container's change feed. */
export const LEASE_FEED_PAGE_SIZE = 100;

/** The lease container's change feed from the moment it was opened: changed leases of this prefix. */
export interface LeaseFeed {
  /** Every lease of this prefix changed since the previous call (latest version of each; deletes are not seen). */
  readChanges(): Promise<Lease[]>;
}

/** TTL of the bootstrap `.lock` document (seconds), as .NET. */
export const INIT_LOCK_TTL_SECONDS = 30;

/**
 * The only writer of lease documents. Every write is a replace with If-Match; on 412 the current document is
 * re-read and the mutation re-applied under the shared OCC retry policy (the mutation decides whether the
 * lease is still ours); 404 and 409 mean lost. See change-feed-leases.md §4.9. Each request takes an optional
 * signal, passed to the SDK: the processor's bounded requests (bounded-request.ts) fire it when they give up.
 */
export class LeaseStore {
  constructor(
    /** The lease container. */
    readonly container: Container,
    /** The lease id prefix of the processor (`<prefix><host>_<db rid>_<container rid>`). */
    readonly prefix: string,
    /** The lease container's partition key: `/id` or `/partitionKey`. */
    readonly layout: "id" | "partitionKey",
    /** Where each request is counted. */
    readonly counters: LeaseOperationCounters,
    private readonly now: () => number = Date.now,
    /**
     * The wait between attempts after a 412 (the processor's clock, so a fake or simulated clock controls it);
     * default: a real timer.
     */
    sleep?: (ms: number, signal?: AbortSignal) => Promise<void>,
  ) {
    this.occ = sleep ? new OccRetryPolicy({ sleep }) : defaultOccRetryPolicy;
  }

  /** The shared OCC retry policy, waiting on the processor's clock. */
  private readonly occ: OccRetryPolicy;

  /** Every lease of this prefix (`STARTSWITH(c.id, '<prefix>..')`). */
  async listAll(signal?: AbortSignal): Promise<Lease[]> {
    const iterator = this.container.items.query<Record<string, unknown>>(
      {
        query: "SELECT * FROM c WHERE STARTSWITH(c.id, @prefix)",
        parameters: [{ name: "@prefix", value: `${this.prefix}..` }],
      },
      signal ? { abortSignal: signal } : {},
    );
    const out: Lease[] = [];
    while (iterator.hasMoreResults()) {
      const page = await iterator.fetchNext();
      this.counters.add("query", page.requestCharge);
      for (const doc of page.resources ?? []) out.push(parseLease(doc));
    }
    return out;
  }

  /**
   * Follows the lease container's change feed from now (the first readChanges() pins the start). One request
   * per page: an idle container answers 304.
   */
  openChangeFeed(): LeaseFeed {
    const iterator = this.container.items.getChangeFeedIterator<Record<string, unknown>>({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      maxItemCount: LEASE_FEED_PAGE_SIZE,
    });
    const idPrefix = `${this.prefix}..`;
    return {
      readChanges: async () => {
        const out: Lease[] = [];
        for (;;) {
          const page = await iterator.readNext();
          this.counters.add("feed", page.requestCharge);
          const docs = page.statusCode === 304 ? [] : (page.result ?? []);
          for (const doc of docs) {
            if (typeof doc.id === "string" && doc.id.startsWith(idPrefix)) out.push(parseLease(doc));
          }
          if (docs.length < LEASE_FEED_PAGE_SIZE) return out;
        }
      },
    };
  }

  /** Reads one lease afresh; undefined when it no longer exists. */
  async read(
    lease: Pick<Lease, "id" | "partitionKeyValue">,
    signal?: AbortSignal,
  ): Promise<Lease | undefined> {
    const res = await this.container
      .item(lease.id, lease.partitionKeyValue)
      .read<Record<string, unknown>>(signal ? { abortSignal: signal } : {});
    this.counters.add("read", res.requestCharge);
    if (res.statusCode === 404 || !res.resource) return undefined;
    return parseLease(res.resource);
  }

  /** Creates a lease document; `undefined` if it already exists (409: another host created it). */
  async create(lease: Lease, signal?: AbortSignal): Promise<Lease | undefined> {
    try {
      const res = await this.container.items.create(
        toLeaseDocument(lease, this.now()) as unknown as ItemDefinition,
        signal ? { abortSignal: signal } : {},
      );
      this.counters.add("create", res.requestCharge);
      return parseLease(res.resource as unknown as Record<string, unknown>);
    } catch (e) {
      this.counters.add("create", 0);
      if (statusOf(e) === 409) return undefined;
      throw e;
    }
  }

  /**
   * Conditional update. `mutate` gets the freshest known copy and returns the new content, or throws
   * LeaseLostError when the lease is no longer ours. `signal` is passed to the SDK (a bounded request's).
   */
  async update(cached: Lease, mutate: (current: Lease) => Lease, signal?: AbortSignal): Promise<Lease> {
    let current = cached;
    // The signal ends the whole update: the write, the re-read after a 412, and the retries after it.
    return this.occ.run(
      async () => {
        const next = mutate(current);
        const doc = toLeaseDocument(next, this.now());
        try {
          const res = await replaceIfMatch(
            this.container,
            current.id,
            current.partitionKeyValue,
            doc as unknown as ItemDefinition,
            current.etag,
            signal,
          );
          this.counters.add("replace", res.requestCharge);
          const written = parseLease(res.resource as unknown as Record<string, unknown>);
          const lsn = sessionTokenLsn(res.sessionToken);
          return lsn === undefined ? written : { ...written, lsn };
        } catch (e) {
          this.counters.add("replace", 0);
          if (e instanceof NotFoundError) throw new LeaseLostError(cached.leaseToken, "gone");
          if (statusOf(e) === 409) throw new LeaseLostError(cached.leaseToken, "conflict");
          if (!(e instanceof PreconditionFailedError)) throw e;
          const fresh = await this.read(current, signal);
          if (!fresh) throw new LeaseLostError(cached.leaseToken, "gone");
          current = fresh;
          throw e; // the shared policy backs off and re-applies `mutate` to the fresh copy
        }
      },
      { signal, onExhausted: () => new LeaseLostError(cached.leaseToken, "retries-exhausted") },
    );
  }

  /** Deletes the lease if it is unchanged since read (If-Match); a lost race throws LeaseLostError. */
  async delete(lease: Lease, signal?: AbortSignal): Promise<void> {
    try {
      const res = await this.container
        .item(lease.id, lease.partitionKeyValue)
        .delete(signal ? { abortSignal: signal } : {});
      this.counters.add("delete", res.requestCharge);
    } catch (e) {
      this.counters.add("delete", 0);
      if (statusOf(e) !== 404) throw e;
    }
  }

  // ---------------------------------------------------------------- bootstrap (.info / .lock)

  private docPk(id: string): Record<string, string> {
    return this.layout === "partitionKey" ? { partitionKey: id } : {};
  }

  /** Whether the bootstrap has run: the `<prefix>.info` document exists. */
  async isInitialized(signal?: AbortSignal): Promise<boolean> {
    const id = infoDocumentId(this.prefix);
    const res = await this.container.item(id, id).read(signal ? { abortSignal: signal } : {});
    this.counters.add("read", res.requestCharge);
    return res.statusCode === 200;
  }

  /** Writes `<prefix>.info`: the bootstrap is done (a 409 from a concurrent host counts as done). */
  async markInitialized(signal?: AbortSignal): Promise<void> {
    const id = infoDocumentId(this.prefix);
    try {
      const res = await this.container.items.create(
        { id, ...this.docPk(id) },
        signal ? { abortSignal: signal } : {},
      );
      this.counters.add("create", res.requestCharge);
    } catch (e) {
      this.counters.add("create", 0);
      if (statusOf(e) !== 409) throw e;
    }
  }

  // ---------------------------------------------------------------- the fleet signal (<prefix>.fleet)

  /** The fleet signal's ETag, or undefined while it does not exist. */
  async readFleetSignal(signal?: AbortSignal): Promise<string | undefined> {
    const id = fleetSignalDocumentId(this.prefix);
    const res = await this.container
      .item(id, id)
      .read<{ _etag?: string }>(signal ? { abortSignal: signal } : {});
    this.counters.add("read", res.requestCharge);
    return res.statusCode === 200 ? (res.etag ?? res.resource?._etag) : undefined;
  }

  /** Rewrites the fleet signal (any writer wins: only the change of ETag means anything); returns the new ETag. */
  async bumpFleetSignal(by: string, signal?: AbortSignal): Promise<string | undefined> {
    const id = fleetSignalDocumentId(this.prefix);
    const body = { id, ...this.docPk(id), by };
    const options = signal ? { abortSignal: signal } : {};
    try {
      const res = await this.container.item(id, id).replace(body, options);
      this.counters.add("replace", res.requestCharge);
      return res.etag;
    } catch (e) {
      this.counters.add("replace", 0);
      if (statusOf(e) !== 404) throw e;
    }
    try {
      const res = await this.container.items.create(body, options);
      this.counters.add("create", res.requestCharge);
      return res.etag;
    } catch (e) {
      this.counters.add("create", 0);
      if (statusOf(e) === 409) return undefined; // another host created it just now: signalled all the same
      throw e;
    }
  }

  /** Creates `<prefix>.lock` (ttl 30 s); returns its etag, or undefined when another host holds it. */
  async acquireInitLock(signal?: AbortSignal): Promise<string | undefined> {
    const id = lockDocumentId(this.prefix);
    try {
      const res = await this.container.items.create(
        { id, ...this.docPk(id), ttl: INIT_LOCK_TTL_SECONDS },
        signal ? { abortSignal: signal } : {},
      );
      this.counters.add("create", res.requestCharge);
      return res.etag;
    } catch (e) {
      this.counters.add("create", 0);
      if (statusOf(e) === 409) return undefined;
      throw e;
    }
  }

  /** Deletes the bootstrap lock written with `etag` (If-Match); one already gone or taken is left alone. */
  async releaseInitLock(etag: string, signal?: AbortSignal): Promise<void> {
    const id = lockDocumentId(this.prefix);
    try {
      this.counters.add("delete", await deleteIfMatch(this.container, id, id, etag, signal));
    } catch (e) {
      this.counters.add("delete", 0);
      if (!(e instanceof NotFoundError) && !(e instanceof PreconditionFailedError)) throw e;
    }
  }
}
