import { type ChangeFeedPullModelIterator, ChangeFeedStartFrom, type Container } from "@azure/cosmos";
import type { RuntimeStatus } from "../types.js";
import { instancesQuery } from "./queries.js";

/**
 * The task hub's orchestration instances as the dev host dashboard follows them on Cosmos DB: a full listing (the
 * backend's instance query, projected), and then only the instance documents changed since, from the hub container's
 * change feed — one request answered 304 (1 RU) while nothing changed, else a page per `PAGE_SIZE` changed documents.
 * The dashboard reads through its own (metered) container, so its RU are told apart from the app's.
 */

/** What the dashboard reads of an instance document (documents.ts InstanceDoc). */
export const INSTANCE_SUMMARY_FIELDS = [
  "instanceId",
  "name",
  "status",
  "createdTime",
  "lastUpdatedTime",
  "output",
] as const;

export type InstanceSummary = Record<Exclude<(typeof INSTANCE_SUMMARY_FIELDS)[number], "output">, string> & {
  status: RuntimeStatus;
  output?: string | null;
};

type Changed = InstanceSummary & { kind?: string; hub?: string };

/** Changed documents per change feed page. */
const PAGE_SIZE = 100;

export class CosmosInstanceListing {
  #feed: ChangeFeedPullModelIterator<Changed> | undefined;

  constructor(
    private readonly container: Container,
    private readonly hubName: string,
  ) {}

  /** Every orchestration instance of the hub; the feed is positioned first, so no change after it is missed. */
  async list(abortSignal?: AbortSignal): Promise<InstanceSummary[]> {
    const feed = this.container.items.getChangeFeedIterator<Changed>({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      maxItemCount: PAGE_SIZE,
    });
    await feed.readNext(); // takes the position (a 304)
    const { resources } = await this.container.items
      .query<InstanceSummary>(instancesQuery(this.hubName, {}, INSTANCE_SUMMARY_FIELDS), { abortSignal })
      .fetchAll();
    this.#feed = feed;
    return resources;
  }

  /**
   * The orchestration instances changed since the last list or changes, at most `maxPages` feed pages of them (the
   * rest on the next call); a change seen twice, around a listing, is harmless. Lists first when it never listed.
   */
  async changes(maxPages: number): Promise<InstanceSummary[]> {
    const feed = this.#feed;
    if (!feed) return this.list();
    const out: InstanceSummary[] = [];
    for (let page = 0; page < maxPages; page++) {
      const res = await feed.readNext();
      for (const d of res.result) {
        if (d.kind !== "instance" || d.hub !== this.hubName || d.instanceId.startsWith("@")) continue;
        out.push(d);
      }
      if (res.statusCode === 304 || res.result.length === 0) break;
    }
    return out;
  }
}
