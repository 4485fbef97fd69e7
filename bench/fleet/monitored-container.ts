import type { Container } from "@azure/cosmos";
import { changeFeedCharge } from "@cosmos-feed/emulator";
import type { InMemoryLeaseContainer } from "./lease-container.js";
import type { HostClock } from "./sim-clock.js";

/**
 * The monitored container, as far as the processor's workers and bootstrap see it: its partition key ranges (one
 * per lease; a split replaces a range by two children) and an idle change feed per range (every read 304). A read
 * of a range that has split fails with 410, as the service answers, so the real worker hands its lease to the real
 * LeaseReplacer. Requests go through the lease container's network (latency, loss) but are metered apart: the
 * figures are about the lease container.
 */

export interface PartitionKeyRange {
  id: string;
  minInclusive: string;
  maxExclusive: string;
}

/**
 * Effective partition keys of hash partitioning V2 have the top two bits of their first byte cleared (below "40"),
 * and "FF" ends the space: the ranges spread over [0, 0x40000000) as 8 hex digits, the last one ending at "FF".
 */
const SPAN = 0x4000_0000;
const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, "0");
const epk = (n: number) => (n <= 0 ? "" : n >= SPAN ? "FF" : hex(n));
const value = (s: string) => (s === "" ? 0 : s === "FF" ? SPAN : Number.parseInt(s, 16));

/** What `getFeedRanges()` returns; the feed reader builds its ranges with this constructor. */
class SimFeedRange {
  constructor(
    readonly minInclusive: string,
    readonly maxExclusive: string,
  ) {}
}

/** What the emulator charges for a change feed read that finds nothing (every read here). */
const IDLE_READ_CHARGE = changeFeedCharge(0);

/** The container's `_rid` (8 bytes: the database's 4, then the collection's). */
export const MONITORED_RID = "ZmxlZXRzaW0=";

/** A range's key in {@link SimMonitoredContainer}'s index of whole ranges. */
const rangeKey = (min: string, max: string) => `${min}|${max}`;

export class SimMonitoredContainer {
  private ranges: PartitionKeyRange[];
  /**
   * The live ranges' "min|max": a feed read checks its range in O(1). It scanned every range (O(leases) per read,
   * so the fleet's reads cost O(leases²) per simulated second).
   */
  private whole: Set<string>;
  private nextId: number;
  /** Feed reads served (all 304). */
  reads = 0;

  constructor(
    leases: number,
    private readonly network: InMemoryLeaseContainer,
  ) {
    this.ranges = Array.from({ length: leases }, (_, i) => ({
      id: String(i),
      minInclusive: epk(Math.floor((i * SPAN) / leases)),
      maxExclusive: epk(Math.floor(((i + 1) * SPAN) / leases)),
    }));
    this.whole = new Set(this.ranges.map((r) => rangeKey(r.minInclusive, r.maxExclusive)));
    this.nextId = leases;
  }

  partitionKeyRanges(): readonly PartitionKeyRange[] {
    return this.ranges;
  }

  /** Splits each named range in two children at its middle; returns the children by parent id. */
  split(ids: readonly string[]): Map<string, PartitionKeyRange[]> {
    const children = new Map<string, PartitionKeyRange[]>();
    const next: PartitionKeyRange[] = [];
    const splitting = new Set(ids);
    for (const r of this.ranges) {
      if (!splitting.has(r.id)) {
        next.push(r);
        continue;
      }
      const mid = epk(Math.floor((value(r.minInclusive) + value(r.maxExclusive)) / 2));
      const a = { id: String(this.nextId++), minInclusive: r.minInclusive, maxExclusive: mid };
      const b = { id: String(this.nextId++), minInclusive: mid, maxExclusive: r.maxExclusive };
      next.push(a, b);
      children.set(r.id, [a, b]);
    }
    this.ranges = next;
    this.whole = new Set(next.map((r) => rangeKey(r.minInclusive, r.maxExclusive)));
    return children;
  }

  forHost(clock: HostClock): Container {
    const net = this.network;
    const feedIterator = (o: { changeFeedStartFrom: { getCfResource(): unknown } }) => {
      const resource = o.changeFeedStartFrom.getCfResource();
      let min: string;
      let max: string;
      if (typeof resource === "string") {
        const c = (JSON.parse(resource) as { Continuation: { minInclusive: string; maxExclusive: string }[] })
          .Continuation[0];
        min = c.minInclusive;
        max = c.maxExclusive;
      } else {
        const r = resource as SimFeedRange;
        min = r.minInclusive;
        max = r.maxExclusive;
      }
      const key = rangeKey(min, max);
      // Every read of the idle feed answers the same continuation: built once per iterator.
      const continuationToken = JSON.stringify({
        rid: MONITORED_RID,
        Continuation: [{ minInclusive: min, maxExclusive: max, continuationToken: '"1"' }],
      });
      return {
        hasMoreResults: true,
        readNext: () =>
          net.request(clock, undefined, () => {
            this.reads++;
            if (!this.whole.has(key))
              throw Object.assign(new Error("Partition key range is gone"), { code: 410 });
            return {
              result: [],
              statusCode: 304,
              requestCharge: IDLE_READ_CHARGE,
              headers: {},
              continuationToken,
            };
          }),
      };
    };
    return {
      id: "monitored",
      read: async () => ({ resource: { id: "monitored", _rid: MONITORED_RID } }),
      getFeedRanges: async () => [new SimFeedRange("", "FF")],
      readPartitionKeyRanges: (o?: { abortSignal?: AbortSignal }) => ({
        fetchAll: () =>
          net.request(clock, o?.abortSignal, () => ({ resources: this.ranges.map((r) => ({ ...r })) })),
      }),
      items: { getChangeFeedIterator: feedIterator },
    } as unknown as Container;
  }
}
