// The result of a measurement from what was sampled: each model row next to its measured value per scenario
// hour, the requests no row accounts for, the start-up requests, the writer's rate and the goal's tally.
import type { CostRow } from "@cosmos-feed/changefeed/tuning";
import { type MeterSnapshot, meterDelta, RuModel } from "@cosmos-feed/emulator";
import { DATABASE, HOUR, MeasureDefaults } from "./defaults.js";
import type { HostTally, Processor } from "./fleet.js";
import { tuneReport } from "./report.js";
import type { CheckedMeasureRequest } from "./request.js";
import type { ComparedRow, MeasuredValue, MeasureResult, Phase, UnaccountedRow } from "./types.js";
import type { WriterStats } from "./writer.js";

/** The meter's keys of the measurement's two containers. */
const meterKeyLeases = `${DATABASE}/leases`;
const meterKeyMonitored = `${DATABASE}/monitored`;

const round1 = (n: number) => Math.round(n * 10) / 10;

/** A processor's own lease-container request counters, by kind. */
export type ProcessorCounts = Processor["counters"]["count"];

/**
 * Start-up requests: everything but the steady traffic (renewals, checkpoints with documents, watch reads) that also
 * ran while the hosts balanced — creates, deletes, queries, reads, metadata (the meter's lease-container kinds
 * between the two snapshots); acquires and steals; each lease's first checkpoint (its start position pinned, no
 * documents); each host's first lease-feed read. Read when the hosts have just balanced.
 */
export function bootstrapRequests(
  beforeStart: MeterSnapshot,
  afterBalance: MeterSnapshot,
  tallies: HostTally[],
  processors: Processor[],
): Partial<Record<string, number>> {
  const bootstrapByKind: Partial<Record<string, number>> = {};
  for (const [kind, e] of Object.entries(meterDelta(beforeStart, afterBalance, meterKeyLeases)))
    if (kind !== "replace" && kind !== "changeFeed" && e) bootstrapByKind[kind] = e.count;
  bootstrapByKind.acquires = tallies.reduce((a, x) => a + x.acquired, 0);
  bootstrapByKind.pins = tallies.reduce((a, x) => a + x.pins, 0);
  // A host's first lease-feed read pins its feed's start; the later ones are watch reads, steady traffic. The
  // meter cannot tell them apart, so count the hosts whose own counters show a lease-feed read by now.
  bootstrapByKind.feedPins = processors.filter((p) => p.counters.count.feed > 0).length;
  return bootstrapByKind;
}

/** What the measuring window sampled: at its start (…0) and its end (…1), and the window's wall-clock length. */
export interface WindowSample {
  req: CheckedMeasureRequest;
  phasesMs: Record<Phase, number>;
  /** The window's wall-clock length (ms, fractional). */
  wallMs: number;
  m0: MeterSnapshot;
  m1: MeterSnapshot;
  tally0: HostTally[];
  tally1: HostTally[];
  counters0: ProcessorCounts[];
  counters1: ProcessorCounts[];
  written0: WriterStats;
  written1: WriterStats;
  /** Leases each host owned at the window's end. */
  owned: number[];
  bootstrapByKind: Partial<Record<string, number>>;
}

/** The measurement's result from its samples (arithmetic only: rates per scenario hour, deviations, the goal). */
export function measureResult(sample: WindowSample): MeasureResult {
  const { req, phasesMs, wallMs, m0, m1, tally0, tally1, counters0, counters1, written0, written1, owned } =
    sample;
  const { bootstrapByKind } = sample;
  const { scenario, scaled, scale } = req;
  const d = (k: keyof HostTally) => tally1.reduce((a, x, i) => a + x[k] - tally0[i][k], 0);
  const perHour = (n: number) => (n * HOUR) / (wallMs * scale);
  const leaseDelta = meterDelta(m0, m1, meterKeyLeases);
  const monDelta = meterDelta(m0, m1, meterKeyMonitored);
  const replace = leaseDelta.replace ?? { count: 0, ru: 0 };
  const ruPerReplace = replace.count > 0 ? replace.ru / replace.count : 0;
  const checkpoints = d("checkpoints");
  const ownershipWrites = d("acquired") + d("released");
  const renewals = Math.max(0, replace.count - checkpoints - ownershipWrites);
  const leaseFeed = leaseDelta.changeFeed ?? { count: 0, ru: 0 };
  const monFeed = monDelta.changeFeed ?? { count: 0, ru: 0 };
  const pages = d("pages");
  const documents = d("documents");
  const empty = Math.max(0, monFeed.count - pages);

  const model = tuneReport(scenario);
  const { ours, oursWithoutWatch } = model;
  const windowFactor = (wallMs * scale) / HOUR;
  const rows: ComparedRow[] = [];
  const compare = (container: "lease" | "monitored", modelRow: CostRow, measured: MeasuredValue) => {
    const dev = (m: number | null, x: number) =>
      m === null ? null : x === 0 ? (m === 0 ? 0 : null) : round1(((m - x) / x) * 100);
    const requests = dev(measured.requestsPerHour, modelRow.requestsPerHour);
    const ru = dev(measured.ruPerHour, modelRow.ruPerHour);
    const modelCountInWindow = Math.round(modelRow.requestsPerHour * windowFactor);
    const meaningful = modelCountInWindow >= MeasureDefaults.meaningfulCount;
    const ok = (v: number | null) => v === null || Math.abs(v) <= MeasureDefaults.goalPct;
    rows.push({
      container,
      what: modelRow.what,
      model: { requestsPerHour: modelRow.requestsPerHour, ruPerHour: modelRow.ruPerHour },
      measured: {
        requestsPerHour: Math.round(measured.requestsPerHour),
        ruPerHour: measured.ruPerHour === null ? null : Math.round(measured.ruPerHour),
      },
      deviationPct: { requests, ru },
      modelCountInWindow,
      meaningful,
      withinGoal: !meaningful || (ok(requests) && ok(ru)),
    });
  };
  const [renewRow, checkpointRow, viewRow, signalRow] = ours.leaseContainer;
  // The fleet signal's point reads, where the model has them (hosts × watch slot > acquire): the window's lease
  // point reads (a 412's re-read is the only other kind, and an idle, balanced fleet has none).
  const signalReads = signalRow ? (leaseDelta.read ?? { count: 0, ru: 0 }) : { count: 0, ru: 0 };
  if (signalRow)
    compare("lease", signalRow, {
      requestsPerHour: perHour(signalReads.count),
      ruPerHour: perHour(signalReads.ru),
    });
  compare("lease", renewRow, {
    requestsPerHour: perHour(renewals),
    ruPerHour: perHour(renewals * ruPerReplace),
  });
  compare("lease", checkpointRow, {
    requestsPerHour: perHour(checkpoints),
    ruPerHour: perHour(checkpoints * ruPerReplace),
  });
  compare("lease", viewRow, {
    requestsPerHour: perHour(leaseFeed.count),
    ruPerHour: perHour(leaseFeed.ru),
  });
  const [emptyRow, pagesRow] = ours.monitoredContainer;
  // The meter does not tell 304s from pages; the handler counts pages and their documents, and the emulator
  // charges a page its base plus a price per document, so the rest of the feed RU is the empty reads'.
  const pagesRu = RuModel.changeFeedBase * pages + RuModel.changeFeedPerDocument * documents;
  compare("monitored", emptyRow, {
    requestsPerHour: perHour(empty),
    ruPerHour: perHour(monFeed.ru - pagesRu),
  });
  compare("monitored", pagesRow, { requestsPerHour: perHour(pages), ruPerHour: perHour(pagesRu) });
  const sumRows = (rs: CostRow[], k: "requestsPerHour" | "ruPerHour") => rs.reduce((a, r) => a + r[k], 0);
  compare(
    "lease",
    {
      what: "lease container in all (model rows)",
      requestsPerHour: sumRows(ours.leaseContainer, "requestsPerHour"),
      ruPerHour: sumRows(ours.leaseContainer, "ruPerHour"),
    },
    {
      requestsPerHour: perHour(renewals + checkpoints + leaseFeed.count + signalReads.count),
      ruPerHour: perHour((renewals + checkpoints) * ruPerReplace + leaseFeed.ru + signalReads.ru),
    },
  );
  compare(
    "monitored",
    {
      what: "monitored container feed reads in all",
      requestsPerHour: sumRows(ours.monitoredContainer, "requestsPerHour"),
      ruPerHour: sumRows(ours.monitoredContainer, "ruPerHour"),
    },
    { requestsPerHour: perHour(monFeed.count), ruPerHour: perHour(monFeed.ru) },
  );

  const unaccounted: UnaccountedRow[] = [];
  const unexplained = (
    container: "lease" | "monitored",
    kind: string,
    what: string,
    count: number,
    ru: number,
  ) => {
    if (count > 0)
      unaccounted.push({
        container,
        kind,
        what,
        countInWindow: count,
        requestsPerHour: Math.round(perHour(count)),
        ruPerHour: Math.round(perHour(ru)),
      });
  };
  const ownership = ownershipReplaces(replace, ownershipWrites);
  unexplained(
    "lease",
    "replace",
    "acquires and releases (leases changing hands)",
    ownership.count,
    ownership.ru,
  );
  for (const [kind, e] of Object.entries(leaseDelta)) {
    if (kind === "replace" || kind === "changeFeed" || (kind === "read" && signalRow) || !e) continue;
    unexplained("lease", kind, LEASE_KIND_MEANING[kind] ?? kind, e.count, e.ru);
  }
  for (const [kind, e] of Object.entries(monDelta)) {
    if (kind === "changeFeed" || kind === "create" || !e) continue;
    unexplained("monitored", kind, MONITORED_KIND_MEANING[kind] ?? kind, e.count, e.ru);
  }

  const bootstrapMeasured = Object.values(bootstrapByKind).reduce((a: number, e) => a + (e ?? 0), 0);
  // Each host's lease-container requests in the window, by kind, from its processor's own counters.
  const hostRequests = counters1.map((c, i) =>
    Object.fromEntries(Object.entries(c).map(([k, v]) => [k, v - counters0[i][k as keyof typeof c]])),
  );
  const counterTotal = hostRequests.reduce((a, h) => a + Object.values(h).reduce((x, v) => x + v, 0), 0);
  const meterTotal = Object.values(leaseDelta).reduce((a, e) => a + (e?.count ?? 0), 0);
  const judged = rows.filter((r) => r.meaningful);
  const within = judged.filter((r) => r.withinGoal);
  const writtenInWindow = written1.written - written0.written;
  return {
    scenario,
    scale,
    scaledIntervals: scaled,
    window: { wallMs: Math.round(wallMs), scenarioMs: Math.round(wallMs * scale) },
    phasesMs,
    model: { ours, oursWithoutWatch, dotnet: model.dotnet },
    rows,
    unaccounted,
    bootstrap: {
      model: ours.bootstrapRequests,
      measured: bootstrapMeasured,
      deviationPct: round1(((bootstrapMeasured - ours.bootstrapRequests) / ours.bootstrapRequests) * 100),
      byKind: bootstrapByKind,
      balanceMs: phasesMs.balancing,
    },
    writer: {
      intendedPerSecond: scenario.writesPerSecond,
      writtenInWindow,
      perScenarioSecond: round1((writtenInWindow * 1000) / (wallMs * scale)),
      failed: written1.failed,
    },
    hosts: owned.map((n, i) => ({
      name: `host-${String(i).padStart(2, "0")}`,
      owned: n,
      leaseRequests: hostRequests[i],
    })),
    leaseRequestsInWindow: { meter: meterTotal, processorCounters: counterTotal },
    goal: {
      pct: MeasureDefaults.goalPct,
      judged: judged.length,
      within: within.length,
      allWithin: within.length === judged.length,
    },
  };
}

/**
 * The window's acquires and releases as lease replaces: no more than the replaces the meter saw (an event can
 * land in the window while its write landed before it), each at the window's mean RU per replace.
 */
export function ownershipReplaces(
  replace: { count: number; ru: number },
  ownershipWrites: number,
): { count: number; ru: number } {
  const count = Math.min(replace.count, ownershipWrites);
  return { count, ru: replace.count > 0 ? (count * replace.ru) / replace.count : 0 };
}

const LEASE_KIND_MEANING: Record<string, string> = {
  read: "point reads (a 412's re-read)",
  query: "all-leases queries (listing)",
  create: "creates (leases, .lock, .info)",
  delete: "deletes (.lock)",
  metadata: "metadata (container, partition key ranges)",
};
const MONITORED_KIND_MEANING: Record<string, string> = {
  metadata: "metadata (container, partition key ranges: the SDK's routing)",
  read: "point reads",
  query: "queries",
};
