import { badRequest } from "../errors.js";
import { parseQuerySpec, runQuery } from "../query/engine.js";
import { RuModel } from "../ru/charges.js";
import { type Account, type OfferEntry, SERVERLESS_OFFERS_REFUSAL } from "../store/account.js";
import type { JsonObject } from "../store/types.js";
import { header, isTrue, jsonBody, jsonObjectBody, type Reply, type RequestContext } from "./context.js";
import { methodNotAllowed } from "./resources.js";

/**
 * The offers API (learn.microsoft.com/rest/api/cosmos-db/offers): `GET /offers` lists every offer,
 * `POST /offers` queries them (the SDK's `readOffer` asks `SELECT * from root where root.resource =
 * "<_self>"`), `GET /offers/{id}` reads one (with `x-ms-cosmos-min-throughput`), `PUT /offers/{id}`
 * replaces it.
 * A database or container without throughput of its own has no offer.
 */
export function offers(ctx: RequestContext): Reply {
  const { account, segments, method } = ctx;
  if (account.serverless) throw badRequest(SERVERLESS_OFFERS_REFUSAL);
  if (segments.length === 1) {
    const all = [...account.offers()].map(offerResource);
    let items: unknown[] = all;
    if (method === "POST") {
      if (!isTrue(ctx, "x-ms-documentdb-isquery"))
        throw badRequest(
          "POST on /offers needs x-ms-documentdb-isquery: true (offers are not created directly).",
        );
      items = runQuery(parseQuerySpec(jsonBody(ctx)), all);
    } else if (method !== "GET") throw methodNotAllowed(ctx);
    return reply(200, { _rid: "", Offers: items, _count: items.length });
  }
  if (segments.length !== 2) throw badRequest(`'/${segments.join("/")}' is not an offers resource.`);
  const id = segments[1];
  if (method === "GET") return offerReply(account, account.offer(id));
  if (method === "PUT") {
    const toAutoscale = isTrue(ctx, "x-ms-cosmos-migrate-offer-to-autopilot");
    const toManual = isTrue(ctx, "x-ms-cosmos-migrate-offer-to-manual-throughput");
    if (toAutoscale && toManual)
      throw badRequest(
        "Send only one of the offer migration headers (to autopilot or to manual throughput).",
      );
    const entry = account.replaceOffer(id, {
      body: jsonObjectBody(ctx),
      ifMatch: header(ctx, "if-match"),
      migrateTo: toAutoscale ? "autoscale" : toManual ? "manual" : undefined,
    });
    return offerReply(account, entry);
  }
  throw methodNotAllowed(ctx);
}

function reply(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return { status, body, headers, charge: RuModel.metadata, kind: "metadata" };
}

function offerReply(account: Account, entry: OfferEntry): Reply {
  return reply(200, offerResource(entry), {
    etag: entry.offer.etag,
    "x-ms-cosmos-min-throughput": String(account.minimumThroughput(entry.offer)),
    "x-ms-offer-replace-pending": "false",
  });
}

/**
 * An offer as the service shows it (V2, user-defined throughput). For autoscale, `offerThroughput` is the
 * RU/s it currently scales to; an idle resource sits at a tenth of its maximum, which is what is shown here
 * (the emulator itself admits up to the maximum at any time).
 */
function offerResource({ offer, resource, resourceRid }: OfferEntry): JsonObject {
  const t = offer.throughput;
  const content: JsonObject = {
    offerThroughput: t.autoscale ? t.ruPerSecond / 10 : t.ruPerSecond,
    offerIsRUPerMinuteThroughputEnabled: false,
    offerMinimumThroughputParameters: {
      maxThroughputEverProvisioned: offer.maxEverProvisioned,
      maxConsumedStorageEverInKB: 0,
    },
  };
  if (offer.lastReplaceTs !== undefined) content.offerLastReplaceTimestamp = offer.lastReplaceTs;
  if (t.autoscale) content.offerAutopilotSettings = { maxThroughput: t.ruPerSecond };
  return {
    resource,
    offerType: "Invalid",
    offerResourceId: resourceRid,
    offerVersion: "V2",
    content,
    id: offer.id,
    _rid: offer.id,
    _self: `offers/${offer.id}/`,
    _etag: offer.etag,
    _ts: offer.ts,
  };
}
