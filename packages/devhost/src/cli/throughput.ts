import type { CosmosClient, OfferDefinition } from "@azure/cosmos";
import { type TuningInput, tune } from "@cosmos-feed/changefeed/tuning";
import { SERVERLESS_RU_PER_PARTITION } from "@cosmos-feed/emulator";
import { CliInputError } from "./leases.js";

/** A serverless container's capacity as the messages write it ("5,000"). */
const SERVERLESS_CAPACITY = SERVERLESS_RU_PER_PARTITION.toLocaleString("en-US");

/**
 * `cosmos-feed throughput`: read, and change, a container's (or a database's) provisioned throughput through the
 * offers API — manual RU/s or the autoscale maximum — with what the lease cost model says a lease container needs.
 */

/** A database's shared throughput, as a container without its own uses it. */
export interface SharedThroughput {
  database: string;
  mode: "manual" | "autoscale";
  /** Manual RU/s, or the autoscale floor. */
  throughput: number | null;
  autoscaleMaxThroughput: number | null;
}

export interface ThroughputReport {
  resource: string;
  mode: "manual" | "autoscale" | "none";
  /** True on a serverless account, whose offers API answers 400: there is no throughput to read or set. */
  serverless?: boolean;
  /**
   * For a container without throughput of its own (mode "none"): its database's shared throughput, or null when the
   * database has none either (serverless).
   */
  sharedFromDatabase?: SharedThroughput | null;
  /** Manual RU/s, or the autoscale floor (10 % of the maximum). */
  throughput: number | null;
  autoscaleMaxThroughput: number | null;
  /** The lowest value the service accepts now (x-ms-cosmos-min-throughput). */
  minimumThroughput: number | null;
  changed?: { from: number | null; to: number };
  recommendation?: {
    model: TuningInput;
    oursLeaseRuPerSecond: number;
    dotnetLeaseRuPerSecond: number;
    /** Manual RU/s with 2× headroom over the higher of the two, at least 400, in steps of 100. */
    recommendedManualThroughput: number;
  };
}

export async function throughput(
  client: CosmosClient,
  o: { database: string; container?: string; set?: number; autoscale?: number; model?: TuningInput },
): Promise<ThroughputReport> {
  const db = client.database(o.database);
  const target = o.container ? db.container(o.container) : db;
  const resource = o.container ? `${o.database}/${o.container}` : o.database;
  const report: ThroughputReport = {
    resource,
    mode: "none",
    throughput: null,
    autoscaleMaxThroughput: null,
    minimumThroughput: null,
  };
  const offers = await target.readOffer().catch((e: unknown) => {
    if (isServerlessRefusal(e)) return undefined;
    throw e;
  });
  if (!offers) {
    report.serverless = true;
    if (o.set !== undefined || o.autoscale !== undefined) throw new CliInputError(nothingToChange(report));
    return withRecommendation(report, o.model);
  }
  let { resource: offer, offer: ref } = offers;
  if (offer && ref) {
    const current = offer.content?.offerThroughput ?? null;
    const auto = offer.content?.offerAutopilotSettings?.maxThroughput ?? null;
    if (o.set !== undefined) {
      if (auto !== null) {
        throw new CliInputError(
          `${resource} uses autoscale (max ${auto} RU/s): change it with --autoscale <max>.`,
        );
      }
      const r = await ref.replace({
        ...offer,
        content: { ...offer.content, offerThroughput: o.set },
      } as unknown as OfferDefinition);
      report.changed = { from: current, to: o.set };
      offer = r.resource ?? offer;
    } else if (o.autoscale !== undefined) {
      if (auto === null) {
        throw new CliInputError(
          `${resource} has manual throughput (${current} RU/s): set it with --set <RU/s>; migrating to autoscale is done in the portal or with az.`,
        );
      }
      const r = await ref.replace({
        ...offer,
        content: { ...offer.content, offerAutopilotSettings: { maxThroughput: o.autoscale } },
      } as unknown as OfferDefinition);
      report.changed = { from: auto, to: o.autoscale };
      offer = r.resource ?? offer;
    }
    const read = await ref.read();
    const now = read.resource ?? offer;
    report.autoscaleMaxThroughput = now.content?.offerAutopilotSettings?.maxThroughput ?? null;
    report.mode = report.autoscaleMaxThroughput !== null ? "autoscale" : "manual";
    report.throughput = now.content?.offerThroughput ?? null;
    const min = Number(read.headers["x-ms-cosmos-min-throughput"]);
    report.minimumThroughput = Number.isFinite(min) && min > 0 ? min : null;
  } else {
    if (o.container) {
      const { resource: dbOffer } = await db.readOffer();
      report.sharedFromDatabase = dbOffer
        ? {
            database: o.database,
            mode: dbOffer.content?.offerAutopilotSettings?.maxThroughput ? "autoscale" : "manual",
            throughput: dbOffer.content?.offerThroughput ?? null,
            autoscaleMaxThroughput: dbOffer.content?.offerAutopilotSettings?.maxThroughput ?? null,
          }
        : null;
    }
    if (o.set !== undefined || o.autoscale !== undefined) throw new CliInputError(nothingToChange(report));
  }
  return withRecommendation(report, o.model);
}

/** A serverless account's 400 for the offers API ("Reading or replacing offers is not supported for serverless accounts."). */
function isServerlessRefusal(e: unknown): boolean {
  const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
  return (
    code === 400 && typeof message === "string" && /not supported for serverless accounts/i.test(message)
  );
}

/** The report with what the lease cost model recommends, when a model is given. */
function withRecommendation(report: ThroughputReport, model: TuningInput | undefined): ThroughputReport {
  if (model) {
    const r = tune(model);
    const peak = Math.max(r.ours.leaseRuPerSecond, r.dotnet.leaseRuPerSecond);
    report.recommendation = {
      model,
      oursLeaseRuPerSecond: r.ours.leaseRuPerSecond,
      dotnetLeaseRuPerSecond: r.dotnet.leaseRuPerSecond,
      recommendedManualThroughput: Math.max(400, Math.ceil((2 * peak) / 100) * 100),
    };
  }
  return report;
}

function describeShared(s: SharedThroughput): string {
  return s.mode === "autoscale"
    ? `autoscale, max ${s.autoscaleMaxThroughput} RU/s`
    : `manual ${s.throughput} RU/s`;
}

/** Why a resource without an offer has nothing to change, and what to do instead (one line). */
export function nothingToChange(r: ThroughputReport): string {
  if (r.serverless) {
    return `${r.resource} is on a serverless account: it has no throughput to change (the service refuses offers there; each container serves up to ${SERVERLESS_CAPACITY} RU/s per physical partition). Deploy with COSMOS_THROUGHPUT_MODE=manual or autoscale for provisioned throughput.`;
  }
  if (r.sharedFromDatabase) {
    const db = r.sharedFromDatabase.database;
    return `${r.resource} has no throughput of its own: it shares database ${db}'s (${describeShared(r.sharedFromDatabase)}); change that one, without --container.`;
  }
  if (r.sharedFromDatabase === null) {
    return `${r.resource} has no throughput, nor has its database: nothing to change (a serverless account has none; on the embedded emulator a container created without throughput gets the service's 400 RU/s, not enforced until set).`;
  }
  return `database ${r.resource} has no shared throughput: its containers have their own, if any (use --container <name>).`;
}

export function formatThroughput(r: ThroughputReport): string {
  const lines = [
    r.serverless
      ? `${r.resource}: a serverless account (no offers; up to ${SERVERLESS_CAPACITY} RU/s per physical partition)`
      : r.mode === "none"
        ? r.sharedFromDatabase
          ? `${r.resource}: no throughput of its own; shares database ${r.sharedFromDatabase.database}'s ${describeShared(r.sharedFromDatabase)}`
          : r.sharedFromDatabase === null
            ? `${r.resource}: no throughput, nor has its database (a serverless account)`
            : `${r.resource}: no shared throughput (its containers have their own, if any)`
        : r.mode === "autoscale"
          ? `${r.resource}: autoscale, max ${r.autoscaleMaxThroughput} RU/s (floor ${r.throughput} RU/s)`
          : `${r.resource}: manual, ${r.throughput} RU/s`,
  ];
  if (r.minimumThroughput !== null)
    lines.push(`  the service accepts no less than ${r.minimumThroughput} RU/s now`);
  if (r.changed) lines.push(`  changed from ${r.changed.from} to ${r.changed.to}`);
  if (r.recommendation) {
    const m = r.recommendation;
    lines.push(
      `  as a lease container for ${m.model.hosts} host(s) × ${m.model.leases} lease(s): this processor ${m.oursLeaseRuPerSecond} RU/s, .NET ${m.dotnetLeaseRuPerSecond} RU/s on average → ${m.recommendedManualThroughput} RU/s manual leaves 2× headroom`,
    );
  }
  return lines.join("\n");
}
