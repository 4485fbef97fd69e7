import { badRequest } from "../errors.js";
import type { JsonObject } from "./types.js";

/**
 * Offers (throughput settings) as the service has them: the limits, the shapes, the ids, the initial partition
 * layout and the rules of a replace. The account (account.ts) keeps them with their owners.
 */

// Throughput limits of the service (learn.microsoft.com/azure/cosmos-db/concepts-limits, "Provisioned
// throughput" and "Minimum throughput limits"; request-units: manual RU/s in increments of 100;
// provision-throughput-autoscale: autoscale max RU/s in increments of 1000).
/** Minimum manual throughput of a container or shared database (RU/s). */
export const MIN_THROUGHPUT = 400;
/** Manual throughput is set in steps of this many RU/s. */
export const THROUGHPUT_STEP = 100;
/** Minimum autoscale maximum (RU/s; it then scales between 100 and 1000). */
export const MIN_AUTOSCALE_MAX_THROUGHPUT = 1000;
/** The autoscale maximum is set in steps of this many RU/s. */
export const AUTOSCALE_STEP = 1000;
/** Default maximum RU/s per container or database (more needs a support request to the service). */
export const MAX_THROUGHPUT = 1_000_000;

// Physical partitions at creation, by the service's documented heuristic
// (learn.microsoft.com/azure/cosmos-db/scaling-provisioned-throughput-best-practices, "How to optimize RU/s
// for large data ingestion"): ROUNDUP(starting RU/s / 6000) for a container with dedicated manual
// throughput, ROUNDUP(RU/s / 10,000) for autoscale (its max RU/s) and for shared-throughput databases.
/** Initial RU/s per physical partition of a container with dedicated manual throughput. */
export const RU_PER_INITIAL_RANGE_MANUAL = 6000;
/** Initial RU/s per physical partition for autoscale and shared databases (also a partition's maximum). */
export const RU_PER_INITIAL_RANGE = 10_000;
/** Upper bound of physical ranges a container may start with (no request can allocate more). */
export const MAX_INITIAL_RANGES = 64;

export interface Throughput {
  /** Manual RU/s, or the autoscale maximum. */
  ruPerSecond: number;
  autoscale: boolean;
}

/** The offer (throughput settings) of a database or container that has throughput of its own. */
export interface Offer {
  /** Its id and _rid: 4 characters, as the service's. */
  readonly id: string;
  throughput: Throughput;
  /** Highest manual RU/s or autoscale maximum ever set; it raises the minimum a replace may set. */
  maxEverProvisioned: number;
  etag: string;
  ts: number;
  /** When the throughput was last replaced (seconds since epoch), if it was. */
  lastReplaceTs?: number;
  /**
   * Set on the offer the emulator gives a container created without throughput in a database without shared
   * throughput (the service gives it 400 RU/s manual): readable and replaceable, but not enforced until a replace
   * sets a throughput on purpose — the dev host's own containers (its durable task hub has no Azure counterpart)
   * are created without throughput and must not be throttled by a figure nobody chose.
   */
  defaulted?: true;
}

/** An offer with the resource it belongs to. */
export interface OfferEntry {
  offer: Offer;
  /** The owner's `_self` (`dbs/{rid}/` or `dbs/{rid}/colls/{rid}/`): the offer's `resource`. */
  resource: string;
  /** The owner's `_rid`: the offer's `offerResourceId`. */
  resourceRid: string;
}

/** A replace of an offer: the new body, and the request headers that govern it. */
export interface OfferReplace {
  body: JsonObject;
  ifMatch?: string;
  /** `x-ms-cosmos-migrate-offer-to-autopilot` / `x-ms-cosmos-migrate-offer-to-manual-throughput`. */
  migrateTo?: "autoscale" | "manual";
}

const OFFER_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A 4-character offer id (longer past 62^4) from a unique sequence number; URL-safe, unlike base64. */
export function offerIdFor(seq: number): string {
  let id = "";
  let n = seq;
  do {
    id = OFFER_ID_ALPHABET[n % 62] + id;
    n = Math.floor(n / 62);
  } while (n > 0);
  return id.padStart(4, OFFER_ID_ALPHABET[0]);
}

/**
 * Physical ranges a new container starts with (the service's heuristic, see RU_PER_INITIAL_RANGE_MANUAL):
 * its own manual RU/s / 6000, its own autoscale max / 10,000, or its shared database's RU/s / 10,000, rounded
 * up; one without throughput; never more than MAX_INITIAL_RANGES.
 */
export function initialRangeCount(own: Throughput | undefined, shared: Throughput | undefined): number {
  const t = own ?? shared;
  if (!t) return 1;
  const perRange = own && !own.autoscale ? RU_PER_INITIAL_RANGE_MANUAL : RU_PER_INITIAL_RANGE;
  return Math.min(MAX_INITIAL_RANGES, Math.max(1, Math.ceil(t.ruPerSecond / perRange)));
}

/**
 * The lowest RU/s a replace may set (concepts-limits "Minimum throughput limits", autoscale-faq "How do I
 * lower the maximum RU/s?"; storage is not counted): manual MAX(400, highest ever / 100), autoscale max
 * MAX(1000, highest ever / 10), rounded up to the step.
 */
export function minimumThroughput(offer: Offer, autoscale: boolean): number {
  if (autoscale) {
    const floor = Math.ceil(offer.maxEverProvisioned / 10 / AUTOSCALE_STEP) * AUTOSCALE_STEP;
    return Math.max(MIN_AUTOSCALE_MAX_THROUGHPUT, floor);
  }
  const floor = Math.ceil(offer.maxEverProvisioned / 100 / THROUGHPUT_STEP) * THROUGHPUT_STEP;
  return Math.max(MIN_THROUGHPUT, floor);
}

/**
 * The throughput an offer replace asks for. Without a migration header the offer keeps its kind (a manual
 * offer given autoscale settings, or the reverse, is a 400 naming the header). With one, the service picks
 * the value and ignores the body's (autoscale-faq, "How does the migration between autoscale and standard
 * (manual) provisioned throughput work?"): to autoscale MAX(1000, current RU/s, highest ever / 10) rounded
 * up to 1000 (storage is not counted); to manual the current autoscale maximum.
 */
export function nextThroughput(
  offer: Offer,
  content: JsonObject,
  migrateTo: "autoscale" | "manual" | undefined,
): Throughput {
  const current = offer.throughput;
  if (migrateTo === "autoscale") {
    if (current.autoscale) throw badRequest("The offer already uses autoscale throughput.");
    const max = Math.max(MIN_AUTOSCALE_MAX_THROUGHPUT, current.ruPerSecond, offer.maxEverProvisioned / 10);
    return {
      ruPerSecond: Math.min(MAX_THROUGHPUT, Math.ceil(max / AUTOSCALE_STEP) * AUTOSCALE_STEP),
      autoscale: true,
    };
  }
  if (migrateTo === "manual") {
    if (!current.autoscale) throw badRequest("The offer already uses manual throughput.");
    return { ruPerSecond: current.ruPerSecond, autoscale: false };
  }
  const settings = content.offerAutopilotSettings;
  const hasSettings = settings !== undefined && settings !== null;
  if (current.autoscale) {
    if (!hasSettings) {
      throw badRequest(
        "This offer uses autoscale throughput: set content.offerAutopilotSettings.maxThroughput, or send x-ms-cosmos-migrate-offer-to-manual-throughput: true to switch it to manual throughput.",
      );
    }
    if (typeof settings !== "object" || Array.isArray(settings))
      throw badRequest("content.offerAutopilotSettings must be an object like {maxThroughput: 4000}.");
    return autoscaleThroughput((settings as JsonObject).maxThroughput);
  }
  if (hasSettings) {
    throw badRequest(
      "This offer uses manual throughput: set content.offerThroughput, or send x-ms-cosmos-migrate-offer-to-autopilot: true to switch it to autoscale.",
    );
  }
  return manualThroughput(content.offerThroughput);
}

/** Manual RU/s as the service accepts them: 400 to 1,000,000 in steps of 100. */
function manualThroughput(value: unknown): Throughput {
  const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (
    typeof n !== "number" ||
    !Number.isInteger(n) ||
    n < MIN_THROUGHPUT ||
    n > MAX_THROUGHPUT ||
    n % THROUGHPUT_STEP !== 0
  ) {
    throw badRequest(
      `The offer should have valid throughput values between ${MIN_THROUGHPUT} and ${MAX_THROUGHPUT} inclusive in increments of ${THROUGHPUT_STEP}; got ${JSON.stringify(value)}.`,
    );
  }
  return { ruPerSecond: n, autoscale: false };
}

/** An autoscale maximum as the service accepts it: 1000 to 1,000,000 in steps of 1000. */
function autoscaleThroughput(value: unknown): Throughput {
  if (
    typeof value !== "number" ||
    !Number.isInteger(value) ||
    value < MIN_AUTOSCALE_MAX_THROUGHPUT ||
    value > MAX_THROUGHPUT ||
    value % AUTOSCALE_STEP !== 0
  ) {
    throw badRequest(
      `The offer should have valid autoscale maxThroughput values between ${MIN_AUTOSCALE_MAX_THROUGHPUT} and ${MAX_THROUGHPUT} inclusive in increments of ${AUTOSCALE_STEP}; got ${JSON.stringify(value)}.`,
    );
  }
  return { ruPerSecond: value, autoscale: true };
}

/**
 * The throughput asked for at creation: `x-ms-offer-throughput` (manual) or
 * `x-ms-cosmos-offer-autopilot-settings` (autoscale), validated as the service does; both at once is a 400.
 */
export function parseThroughputHeaders(
  manual: string | undefined,
  autoscale: string | undefined,
): Throughput | undefined {
  if (manual !== undefined && autoscale !== undefined) {
    throw badRequest(
      "Specify either x-ms-offer-throughput (manual) or x-ms-cosmos-offer-autopilot-settings (autoscale), not both.",
    );
  }
  if (manual !== undefined) return manualThroughput(manual);
  if (autoscale !== undefined) {
    let settings: unknown;
    try {
      settings = JSON.parse(autoscale);
    } catch {
      throw badRequest('x-ms-cosmos-offer-autopilot-settings must be JSON like {"maxThroughput": 4000}.');
    }
    if (settings === null || typeof settings !== "object" || Array.isArray(settings))
      throw badRequest('x-ms-cosmos-offer-autopilot-settings must be JSON like {"maxThroughput": 4000}.');
    return autoscaleThroughput((settings as { maxThroughput?: unknown }).maxThroughput);
  }
  return undefined;
}
