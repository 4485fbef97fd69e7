import { type ChangeFeedPullModelIterator, ChangeFeedStartFrom, type Container } from "@azure/cosmos";
import { instancesQuery, runtimeStatusOf } from "../durable/hub.js";
import type { RuntimeStatus } from "../durable/types.js";
import type { DurableData, InstanceRow } from "./types.js";

/**
 * The orchestration panel's instances, kept in memory so that a refresh does not cost more as instances pile up.
 * Listing the hub's instances every refresh (one query over the task hub's container) is charged per document the
 * query reads — on the service by what it loads, on the emulator by every document of the container — so its cost
 * grew with the instances (10 RU/s with 11 of them). Here a full listing is read only at the first refresh and then
 * every `rescanMs` (that is how a purged instance leaves: the latest-version change feed shows no deletes); every
 * other refresh reads the container's change feed from where the last one stopped: one request answered 304 (1 RU)
 * while nothing changed, else a page per `PAGE_SIZE` changed documents — the app's work, not the number of instances.
 */

/** Changed documents per change feed page; a refresh reads at most MAX_PAGES of them (the rest on the next). */
const PAGE_SIZE = 100;
const MAX_PAGES = 10;
/** What of an instance's output (or failure message) the panel shows, in characters. */
export const OUTPUT_CHARS = 500;

/** What the panel reads of an instance document (packages/devhost/src/durable/documents.ts InstanceDoc). */
const INSTANCE_FIELDS = ["instanceId", "name", "status", "createdTime", "lastUpdatedTime", "output"] as const;
type InstanceLite = Record<Exclude<(typeof INSTANCE_FIELDS)[number], "output">, string> & {
  status: RuntimeStatus;
  output?: string | null;
  kind?: string;
  hub?: string;
};

type Feed = ChangeFeedPullModelIterator<InstanceLite>;

const rowOf = (d: InstanceLite): InstanceRow => ({
  instanceId: d.instanceId,
  name: d.name,
  runtimeStatus: runtimeStatusOf(d.status),
  createdTime: d.createdTime,
  lastUpdatedTime: d.lastUpdatedTime,
  output: typeof d.output === "string" ? d.output.slice(0, OUTPUT_CHARS) : null,
});

export class InstanceView {
  #rows = new Map<string, InstanceRow>();
  #feed: Feed | undefined;
  #listedAt = Number.NEGATIVE_INFINITY;
  #key = "";

  constructor(private readonly rescanMs: number) {}

  async read(
    container: Container,
    where: { databaseName: string; containerName: string; hubName: string },
    latest: number,
    now: number,
    abortSignal?: AbortSignal,
  ): Promise<DurableData> {
    const key = `${where.databaseName}\u0000${where.containerName}\u0000${where.hubName}`;
    try {
      if (!this.#feed || key !== this.#key || now - this.#listedAt >= this.rescanMs) {
        await this.#list(container, where.hubName, abortSignal);
        this.#key = key;
        this.#listedAt = now;
      } else {
        await this.#follow(this.#feed, where.hubName);
      }
    } catch (e) {
      this.#feed = undefined; // the next refresh lists again
      throw e;
    }
    const all = [...this.#rows.values()];
    const counts: Record<string, number> = {};
    for (const r of all) counts[r.runtimeStatus] = (counts[r.runtimeStatus] ?? 0) + 1;
    const rows = all
      .sort((a, b) => b.createdTime.localeCompare(a.createdTime) || a.instanceId.localeCompare(b.instanceId))
      .slice(0, latest);
    return {
      hubName: where.hubName,
      container: `${where.databaseName}/${where.containerName}`,
      counts,
      total: all.length,
      latest: rows,
    };
  }

  /** A full listing with the hub's own query; the feed is positioned first, so no change after it is missed. */
  async #list(container: Container, hubName: string, abortSignal?: AbortSignal): Promise<void> {
    const feed = container.items.getChangeFeedIterator<InstanceLite>({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      maxItemCount: PAGE_SIZE,
    });
    await feed.readNext(); // takes the position (a 304)
    const { resources } = await container.items
      .query<InstanceLite>(instancesQuery(hubName, {}, INSTANCE_FIELDS), { abortSignal })
      .fetchAll();
    this.#rows = new Map(resources.map((d) => [d.instanceId, rowOf(d)]));
    this.#feed = feed;
  }

  /** The instance documents changed since the last read (a change seen twice, around a listing, is harmless). */
  async #follow(feed: Feed, hubName: string): Promise<void> {
    for (let page = 0; page < MAX_PAGES; page++) {
      const res = await feed.readNext();
      const docs = res.result;
      for (const d of docs) {
        if (d.kind !== "instance" || d.hub !== hubName || d.instanceId.startsWith("@")) continue;
        this.#rows.set(d.instanceId, rowOf(d));
      }
      if (res.statusCode === 304 || docs.length === 0) return;
    }
  }
}
