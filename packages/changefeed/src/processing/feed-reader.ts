import {
  ChangeFeedMode,
  type ChangeFeedPullModelIterator,
  ChangeFeedStartFrom,
  type Container,
  type FeedRange,
} from "@azure/cosmos";
import { sessionTokenRangeId } from "@cosmos-feed/core/cosmos/session";
import type { EpkRange } from "../leases/lease.js";

/** Where a lease without a continuation starts. */
export type StartPosition = { kind: "beginning" } | { kind: "time"; time: Date } | { kind: "now" };

/** One page read for a lease's range. */
export type FeedPage<T> =
  | { kind: "changes"; items: T[]; etag: string; requestCharge: number; sessionToken: string | undefined }
  | { kind: "empty"; etag: string | undefined; requestCharge: number; sessionToken: string | undefined }
  /**
   * The range was split under the iterator, or the partition key range of a version-0 lease was merged away:
   * the lease must be replaced (children after a split, an EPK lease after a merge).
   */
  | { kind: "gone" };

interface CompositeToken {
  rid: string;
  Continuation: { minInclusive: string; maxExclusive: string; continuationToken: string | null }[];
}

/**
 * The SDK's public API has no way to construct a FeedRange for an arbitrary EPK range; its only concrete
 * class is what `getFeedRanges()` returns, so instances are made with that constructor.
 */
async function feedRangeFactory(container: Container): Promise<(min: string, max: string) => FeedRange> {
  const ranges = await container.getFeedRanges();
  const ctor = (ranges[0] as object).constructor as new (min: string, max: string) => FeedRange;
  return (min, max) => new ctor(min, max);
}

/**
 * Per container object (one per processor, shared by its workers): the FeedRange factory and the container's
 * rid, read once instead of once per lease start (a pkranges read and a container read each).
 */
const factories = new WeakMap<Container, Promise<(min: string, max: string) => FeedRange>>();
const rids = new WeakMap<Container, Promise<string>>();

function cached<V>(
  map: WeakMap<Container, Promise<V>>,
  container: Container,
  load: () => Promise<V>,
): Promise<V> {
  let p = map.get(container);
  if (!p) {
    p = load();
    map.set(container, p);
    // A failed read is not remembered: the next lease start tries again.
    p.catch(() => map.delete(container));
  }
  return p;
}

/** What a {@link LeaseFeedReader} reads. */
export interface LeaseFeedReaderOptions {
  container: Container;
  range: EpkRange;
  /** The lease's raw etag, or null to start at `start`. */
  continuation: string | null;
  start: StartPosition;
  /** Documents per page; the service's default when undefined. */
  maxItemCount?: number;
  allVersions?: boolean;
  /** A version-0 lease's partition key range id: a page served by another range means it was merged away. */
  partitionKeyRangeId?: string;
}

/**
 * Reads the change feed of one lease's EPK range through the SDK's pull model, and exposes what the lease
 * needs: the raw etag of each page (the .NET ContinuationToken) and whether the range is still whole.
 */
export class LeaseFeedReader<T> {
  private iterator: ChangeFeedPullModelIterator<T> | undefined;
  private readonly container: Container;
  private readonly range: EpkRange;
  /** Where a (re)opened iterator starts: the lease's etag, then the etag of the last page returned. */
  private position: string | null;
  private readonly start: StartPosition;
  private readonly maxItemCount: number | undefined;
  private readonly allVersions: boolean;
  private readonly partitionKeyRangeId: string | undefined;

  constructor(o: LeaseFeedReaderOptions) {
    this.container = o.container;
    this.range = o.range;
    this.position = o.continuation;
    this.start = o.start;
    this.maxItemCount = o.maxItemCount;
    this.allVersions = o.allVersions ?? false;
    this.partitionKeyRangeId = o.partitionKeyRangeId;
  }

  private async open(): Promise<ChangeFeedPullModelIterator<T>> {
    const mode = this.allVersions ? ChangeFeedMode.AllVersionsAndDeletes : ChangeFeedMode.LatestVersion;
    const common = {
      changeFeedMode: mode,
      ...(this.maxItemCount ? { maxItemCount: this.maxItemCount } : {}),
    };
    if (this.position) {
      const rid = await cached(rids, this.container, async () => {
        const { resource } = await this.container.read();
        return resource?._rid as string;
      });
      const token: CompositeToken = {
        rid,
        Continuation: [
          {
            minInclusive: this.range.min,
            maxExclusive: this.range.max,
            continuationToken: this.position,
          },
        ],
      };
      return this.container.items.getChangeFeedIterator<T>({
        ...common,
        changeFeedStartFrom: ChangeFeedStartFrom.Continuation(JSON.stringify(token)),
      });
    }
    const make = await cached(factories, this.container, () => feedRangeFactory(this.container));
    const feedRange = make(this.range.min, this.range.max);
    const startFrom =
      this.start.kind === "beginning"
        ? ChangeFeedStartFrom.Beginning(feedRange)
        : this.start.kind === "time"
          ? ChangeFeedStartFrom.Time(this.start.time, feedRange)
          : ChangeFeedStartFrom.Now(feedRange);
    return this.container.items.getChangeFeedIterator<T>({ ...common, changeFeedStartFrom: startFrom });
  }

  /**
   * Drops the iterator of a read given up in flight (the SDK's readNext takes no abort signal): its late answer
   * would move that iterator past a page nobody handled, so the next read opens a new one at the last page returned.
   */
  abandon(): void {
    this.iterator = undefined;
  }

  async next(): Promise<FeedPage<T>> {
    const iterator = this.iterator ?? (await this.open());
    this.iterator = iterator;
    const res = await iterator.readNext();
    // Abandoned while in flight: the caller has moved on; leave the position where it was.
    if (this.iterator !== iterator)
      return { kind: "empty", etag: undefined, requestCharge: res.requestCharge, sessionToken: undefined };
    const token = JSON.parse(res.continuationToken) as CompositeToken;
    const entries = token.Continuation;
    if (
      entries.length !== 1 ||
      entries[0].minInclusive !== this.range.min ||
      entries[0].maxExclusive !== this.range.max
    ) {
      // The SDK followed a split to the children: one lease can no longer describe the position.
      return { kind: "gone" };
    }
    const etag = entries[0].continuationToken ?? undefined;
    if (etag) this.position = etag;
    const sessionToken = res.headers["x-ms-session-token"] as string | undefined;
    // Session tokens start with the id of the range that served the read. The SDK follows a merge silently
    // (EPK headers on the merged range); .NET then turns the version-0 lease into a version-1 one, and so do we.
    if (this.partitionKeyRangeId !== undefined) {
      const served = sessionTokenRangeId(sessionToken);
      if (served !== undefined && served !== this.partitionKeyRangeId) return { kind: "gone" };
    }
    if (res.statusCode === 304 || res.result.length === 0) {
      return { kind: "empty", etag, requestCharge: res.requestCharge, sessionToken };
    }
    return {
      kind: "changes",
      items: res.result,
      etag: etag as string,
      requestCharge: res.requestCharge,
      sessionToken,
    };
  }
}
