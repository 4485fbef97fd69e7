import type { Container } from "@azure/cosmos";
import { CosmosInstanceListing, type InstanceSummary } from "../durable/cosmos-backend/instance-listing.js";
import { runtimeStatusOf } from "../durable/status-view.js";
import type { DurableData, InstanceRow } from "./types.js";

/**
 * The orchestration panel's instances, kept in memory so that a refresh does not cost more as instances pile up.
 * Listing the hub's instances every refresh (one query over the task hub's container) is charged per document the
 * query reads — on the service by what it loads, on the emulator by every document of the container — so its cost
 * grew with the instances (10 RU/s with 11 of them). Here a full listing is read only at the first refresh and then
 * every `rescanMs` (that is how a purged instance leaves: the latest-version change feed shows no deletes); every
 * other refresh reads the container's change feed from where the last one stopped: one request answered 304 (1 RU)
 * while nothing changed, else a page per 100 changed documents (instance-listing.ts) — the app's work, not the number of instances.
 */

/** Change feed pages a refresh reads at most (the rest on the next). */
const MAX_PAGES = 10;
/** What of an instance's output (or failure message) the panel shows, in characters. */
export const OUTPUT_CHARS = 500;

const rowOf = (d: InstanceSummary): InstanceRow => ({
  instanceId: d.instanceId,
  name: d.name,
  runtimeStatus: runtimeStatusOf(d.status),
  createdTime: d.createdTime,
  lastUpdatedTime: d.lastUpdatedTime,
  output: typeof d.output === "string" ? d.output.slice(0, OUTPUT_CHARS) : null,
});

export class InstanceView {
  #rows = new Map<string, InstanceRow>();
  #listing: CosmosInstanceListing | undefined;
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
      if (!this.#listing || key !== this.#key || now - this.#listedAt >= this.rescanMs) {
        await this.#list(container, where.hubName, abortSignal);
        this.#key = key;
        this.#listedAt = now;
      } else {
        await this.#follow(this.#listing);
      }
    } catch (e) {
      this.#listing = undefined; // the next refresh lists again
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

  /** A full listing (the backend's, through the dashboard's container); then only changes are read. */
  async #list(container: Container, hubName: string, abortSignal?: AbortSignal): Promise<void> {
    const listing = new CosmosInstanceListing(container, hubName);
    const all = await listing.list(abortSignal);
    this.#rows = new Map(all.map((d) => [d.instanceId, rowOf(d)]));
    this.#listing = listing;
  }

  /** The instance documents changed since the last read. */
  async #follow(listing: CosmosInstanceListing): Promise<void> {
    for (const d of await listing.changes(MAX_PAGES)) this.#rows.set(d.instanceId, rowOf(d));
  }
}
