import {
  type CosmosClient,
  type CosmosHeaders,
  type PluginConfig,
  PluginOn,
  type RequestContext,
} from "@azure/cosmos";
import { type CosmosConnection, createCosmosClient } from "../connections.js";
import type { RuTotals } from "./rates.js";

/**
 * The dashboard's own RU, per "db/container" as the emulator's meter names it: a request plugin on the dashboard's
 * clients adds up `x-ms-request-charge` of every response (errors too: the service charges a 404 or 429's work).
 * Only data-plane requests count — `dbs/{db}/colls/{c}/docs…` and `…/operations/…` — because the meter counts only
 * those (container reads and partition key range reads are not metered).
 */
export class RuTally {
  readonly #totals = new Map<string, number>();

  add(container: string, ru: number): void {
    if (!Number.isFinite(ru) || ru <= 0) return;
    this.#totals.set(container, (this.#totals.get(container) ?? 0) + ru);
  }

  /** Cumulative RU per container since the tally began. */
  totals(): RuTotals {
    return Object.fromEntries(this.#totals);
  }

  get total(): number {
    let s = 0;
    for (const v of this.#totals.values()) s += v;
    return s;
  }

  /** The SDK request plugin that feeds this tally. */
  plugin(): PluginConfig {
    return {
      on: PluginOn.request,
      plugin: async (context: RequestContext, _node, next) => {
        const container = meteredContainer(context.path);
        try {
          const res = await next(context);
          if (container) this.add(container, chargeOf(res.headers));
          return res;
        } catch (e) {
          const headers = (e as { headers?: CosmosHeaders })?.headers;
          if (container && headers) this.add(container, chargeOf(headers));
          throw e;
        }
      },
    };
  }
}

function chargeOf(headers: CosmosHeaders | undefined): number {
  const raw = headers?.["x-ms-request-charge"];
  const n = typeof raw === "number" ? raw : Number(raw ?? 0);
  return Number.isFinite(n) ? n : 0;
}

/** "db/container" of a data-plane request path (`/dbs/db/colls/c/docs[/id]`), else undefined. */
export function meteredContainer(path: string | undefined): string | undefined {
  const m = /^\/?dbs\/([^/]+)\/colls\/([^/]+)\/(docs|operations)(\/|$)/.exec(path ?? "");
  if (!m) return undefined;
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  return `${decode(m[1])}/${decode(m[2])}`;
}

/** A client of its own for the dashboard (own caches, own tally), for a resolved connection. */
export function talliedClient(connection: CosmosConnection, tally: RuTally): CosmosClient {
  return createCosmosClient(connection, { plugins: [tally.plugin()] });
}
