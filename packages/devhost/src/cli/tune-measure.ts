/**
 * `cosmos-feed tune --measure`: runs a tuning scenario on the embedded emulator, over a real socket, with real
 * processors (one ChangeFeedProcessor per host, in this process) and a real writer, with every interval divided by
 * `scale`; reads the emulator's RU meter and the processors' own counters and events over a wall-clock window, and
 * puts each row of the lease cost model (packages/changefeed/src/tuning/model.ts) next to its measured value per scenario hour.
 *
 * Phases: seeding (a few documents per range), balancing (until every lease is owned, each host has its share and
 * no lease changed hands for two acquire intervals), settling (one expiration interval, so start-up writes are
 * over and renewals are on their own schedule), measuring (the window). docs/tuning.md describes the method.
 */
import { type Container, type ContainerRequest, CosmosClient } from "@azure/cosmos";
import {
  ChangeFeedDefaults,
  type ChangeFeedProcessor,
  type ChangeFeedProcessorOptions,
  createChangeFeedProcessor,
  InvalidProcessorOptionsError,
} from "@cosmos-feed/changefeed";
import { resolveOptions } from "@cosmos-feed/changefeed/options";
import {
  type AlgorithmCost,
  type CostRow,
  InvalidTuningInputError,
  type TuningInput,
  validateTuningInput,
} from "@cosmos-feed/changefeed/tuning";
import { createContainerIfNotExists, createDatabaseIfNotExists } from "@cosmos-feed/core/cosmos/ensure";
import { abortableSleep } from "@cosmos-feed/core/cosmos/retry";
import {
  meterDelta,
  RANGE_COUNT_HEADER,
  RuModel,
  type RunningEmulator,
  startEmulator,
} from "@cosmos-feed/emulator";
import { CliInputError } from "./leases.js";
import { parseDuration, type TuneCliOptions, tuneReport, tuningInputFromOptions } from "./tune.js";
import { MODEL_TOLERANCE_PCT } from "./tune-interop.js";

const HOUR = 3_600_000;

/**
 * The lease container the scenario creates: partitioned by /id, TTL on, nothing indexed (a lease is read by id and
 * by the feed, never queried) — as this project's own lease container (src/shared/containers.json, role `leases`).
 */
const LEAN_LEASE_CONTAINER = {
  partitionKey: { paths: ["/id"] },
  defaultTtl: -1,
  indexingPolicy: {
    indexingMode: "consistent",
    automatic: true,
    includedPaths: [],
    excludedPaths: [{ path: "/*" }],
  },
} satisfies Omit<ContainerRequest, "id">;

/** The knobs of a measurement, each named once. */
export const MeasureDefaults = {
  /** Every interval (and the write rate's period) is divided by this. */
  scale: 10,
  /** Wall-clock measuring window (ms). */
  windowMs: 60_000,
  /** Documents written per range before the processors start (seeding). */
  seedDocumentsPerLease: 5,
  /** Balanced = no lease changed hands for this many acquire intervals (scaled). */
  steadyAcquireIntervals: 2,
  /** Give up balancing after this many acquire intervals plus one expiration (scaled), at least 30 s. */
  balanceTimeoutAcquireIntervals: 60,
  balanceTimeoutMinMs: 30_000,
  /** How often the balancing phase looks at the hosts (ms). */
  balanceCheckMs: 50,
  /** The writer's tick (ms): each tick writes the documents due by then. */
  writerTickMs: 20,
  /** Partition key values the writer spreads its documents over. */
  writerKeys: 1_000,
  /** Most hosts and leases (the emulator's ranges per container). */
  maxHosts: 64,
  maxLeases: 64,
  /** Most writes per wall-clock second (scenario rate × scale) the in-process writer attempts. */
  maxWallWritesPerSecond: 2_000,
  /** Rows whose model count in the window is below this are not held to the ±15 % goal (too few to compare). */
  meaningfulCount: 20,
  /** The goal: model within this many percent of the measurement. */
  goalPct: MODEL_TOLERANCE_PCT,
} as const;

export interface MeasureRequest {
  /** The scenario, in scenario (unscaled) milliseconds. */
  scenario: TuningInput;
  scale: number;
  windowMs: number;
}

/** The scenario's intervals as the processors run them (scenario ÷ scale, whole ms). */
interface ScaledIntervals {
  leaseRenewInterval: number;
  leaseAcquireInterval: number;
  leaseExpirationInterval: number;
  leaseSafetyMargin: number;
  feedPollDelay: number;
  leaseWatchInterval: number;
  maxCheckpointDelay: number;
}

export interface CheckedMeasureRequest {
  /** The scenario the model is computed for: the scaled intervals × scale (what the processors really run). */
  scenario: Required<TuningInput>;
  scaled: ScaledIntervals;
  scale: number;
  windowMs: number;
}

/** Refuses what cannot be measured (one message per problem, joined), before anything starts. */
export function checkMeasureRequest(req: MeasureRequest): CheckedMeasureRequest {
  const { scale, windowMs } = req;
  if (!Number.isFinite(scale) || scale < 1 || scale > 1_000)
    throw new CliInputError(`--scale is a number from 1 to 1000; got ${scale}.`);
  if (!Number.isFinite(windowMs) || windowMs < 500 || windowMs > 24 * HOUR)
    throw new CliInputError(`--window is a duration from 500ms to 24h; got ${windowMs} ms.`);
  let scenario: Required<TuningInput>;
  try {
    scenario = validateTuningInput(req.scenario);
  } catch (e) {
    if (e instanceof InvalidTuningInputError) throw new CliInputError(e.message);
    throw e;
  }
  if (scenario.hosts > MeasureDefaults.maxHosts || scenario.leases > MeasureDefaults.maxLeases)
    throw new CliInputError(
      `--measure runs at most ${MeasureDefaults.maxHosts} hosts and ${MeasureDefaults.maxLeases} leases (ranges); got ${scenario.hosts} × ${scenario.leases}.`,
    );
  if (scenario.writesPerSecond * scale > MeasureDefaults.maxWallWritesPerSecond)
    throw new CliInputError(
      `--writes × --scale is the writer's rate per wall-clock second, at most ${MeasureDefaults.maxWallWritesPerSecond}; got ${scenario.writesPerSecond * scale}.`,
    );
  const down = (name: string, ms: number, zeroOk = false): number => {
    if (zeroOk && ms === 0) return 0;
    const v = Math.round(ms / scale);
    if (v < 1) throw new CliInputError(`${name} ÷ --scale is below 1 ms (${ms} ms ÷ ${scale}).`);
    return v;
  };
  const scaled: ScaledIntervals = {
    leaseRenewInterval: down("leaseRenewInterval", scenario.leaseRenewIntervalMs),
    leaseAcquireInterval: down("leaseAcquireInterval", scenario.leaseAcquireIntervalMs),
    leaseExpirationInterval: down("leaseExpirationInterval", scenario.leaseExpirationIntervalMs),
    // The processor's own default, scaled: min(5 s, expiration / 10).
    leaseSafetyMargin: Math.max(
      1,
      Math.round(
        Math.min(ChangeFeedDefaults.leaseSafetyMargin, scenario.leaseExpirationIntervalMs / 10) / scale,
      ),
    ),
    feedPollDelay: down("feedPollDelay", scenario.feedPollDelayMs),
    leaseWatchInterval: down("leaseWatchInterval", scenario.leaseWatchIntervalMs, true),
    maxCheckpointDelay: down("maxCheckpointDelay", scenario.maxCheckpointDelayMs, true),
  };
  if (2 * scaled.leaseRenewInterval > scaled.leaseExpirationInterval)
    throw new CliInputError(
      `leaseExpirationInterval (${scaled.leaseExpirationInterval} ms after scaling) must be at least twice leaseRenewInterval (${scaled.leaseRenewInterval} ms after scaling), as the processor requires.`,
    );
  try {
    // The processor's own checks (safety margin against the renewal age, …); they read no container.
    resolveOptions({ ...scaled } as ChangeFeedProcessorOptions, () => "check");
  } catch (e) {
    if (e instanceof InvalidProcessorOptionsError) throw new CliInputError(`after scaling: ${e.message}`);
    throw e;
  }
  const up = (ms: number) => ms * scale;
  return {
    scenario: {
      ...scenario,
      leaseRenewIntervalMs: up(scaled.leaseRenewInterval),
      leaseAcquireIntervalMs: up(scaled.leaseAcquireInterval),
      leaseExpirationIntervalMs: up(scaled.leaseExpirationInterval),
      feedPollDelayMs: up(scaled.feedPollDelay),
      leaseWatchIntervalMs: up(scaled.leaseWatchInterval),
      maxCheckpointDelayMs: up(scaled.maxCheckpointDelay),
    },
    scaled,
    scale,
    windowMs,
  };
}

/** `--scale`: a plain positive number (1–1000). */
export function parseScale(raw: string): number {
  const t = raw.trim();
  if (!/^\d+(\.\d+)?$/.test(t)) throw new CliInputError(`--scale is a number from 1 to 1000; got '${raw}'.`);
  const n = Number(t);
  if (n < 1 || n > 1_000) throw new CliInputError(`--scale is a number from 1 to 1000; got '${raw}'.`);
  return n;
}

export type Phase = "seeding" | "balancing" | "settling" | "measuring";
type ProgressFn = (phase: Phase, fraction: number, detail?: string) => void;

export interface MeasuredValue {
  requestsPerHour: number;
  ruPerHour: number | null;
}

export interface ComparedRow {
  container: "lease" | "monitored";
  what: string;
  model: { requestsPerHour: number; ruPerHour: number };
  measured: MeasuredValue;
  /** (measured − model) / model, in %; null when the model says 0. */
  deviationPct: { requests: number | null; ru: number | null };
  /** Requests the model expects within the window: rows below MeasureDefaults.meaningfulCount are not judged. */
  modelCountInWindow: number;
  meaningful: boolean;
  withinGoal: boolean;
}

interface UnaccountedRow {
  container: "lease" | "monitored";
  kind: string;
  what: string;
  countInWindow: number;
  requestsPerHour: number;
  ruPerHour: number;
}

export interface MeasureResult {
  scenario: Required<TuningInput>;
  scale: number;
  scaledIntervals: ScaledIntervals;
  window: { wallMs: number; scenarioMs: number };
  phasesMs: Record<Phase, number>;
  model: { ours: AlgorithmCost; oursWithoutWatch: AlgorithmCost; dotnet: AlgorithmCost };
  rows: ComparedRow[];
  /** Lease-container requests in the window the model has no row for (and the monitored container's besides feed reads and the writer). */
  unaccounted: UnaccountedRow[];
  bootstrap: {
    model: number;
    measured: number;
    deviationPct: number;
    /**
     * By operation kind (meter), plus acquires, pins (first checkpoints) and feedPins (first lease-feed reads: the
     * hosts whose own counters show a lease-feed read when balanced).
     */
    byKind: Partial<Record<string, number>>;
    balanceMs: number;
  };
  writer: { intendedPerSecond: number; writtenInWindow: number; perScenarioSecond: number; failed: number };
  hosts: { name: string; owned: number; leaseRequests: Record<string, number> }[];
  /** The processors' own lease-container counters vs the emulator's meter, in the window (a consistency check). */
  leaseRequestsInWindow: { meter: number; processorCounters: number };
  goal: { pct: number; judged: number; within: number; allWithin: boolean };
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/** Sleeps `ms`, reporting progress every ~1/40 of it. */
async function progressSleep(ms: number, phase: Phase, progress: ProgressFn | undefined): Promise<void> {
  const t0 = performance.now();
  const step = Math.max(50, Math.min(1_000, ms / 40));
  for (;;) {
    const left = t0 + ms - performance.now();
    progress?.(phase, Math.min(1, (ms - left) / ms));
    if (left <= 0) return;
    await abortableSleep(Math.min(step, left));
  }
}

interface HostTally {
  acquired: number;
  released: number;
  lost: number;
  checkpoints: number;
  /** Each lease's first checkpoint (its start position, pinned by its first read). */
  pins: number;
  pages: number;
  documents: number;
  lastChangeAt: number;
}

const DATABASE = "tune-measure";

/** Runs one measurement; the emulator and every processor are stopped before it returns. */
export async function measureScenario(
  req: CheckedMeasureRequest,
  progress?: ProgressFn,
): Promise<MeasureResult> {
  const { scenario, scaled, scale, windowMs } = req;
  const H = scenario.hosts;
  const L = scenario.leases;
  const phasesMs: Record<Phase, number> = { seeding: 0, balancing: 0, settling: 0, measuring: 0 };
  const emu: RunningEmulator = await startEmulator({ port: 0, enforceThroughput: false });
  const clients: CosmosClient[] = [];
  const newClient = () => {
    const c = new CosmosClient({ endpoint: emu.endpoint, key: emu.key });
    clients.push(c);
    return c;
  };
  const processors: ChangeFeedProcessor<Record<string, unknown>>[] = [];
  let stopWriter = () => {};
  try {
    // Seeding: the containers (the monitored one with L physical ranges, the app's lean lease container) and a
    // few documents in each range.
    let t = Date.now();
    progress?.("seeding", 0);
    const admin = newClient();
    const { database } = await createDatabaseIfNotExists(admin, { id: DATABASE });
    const { container: monitored } = await createContainerIfNotExists(
      database,
      { id: "monitored", partitionKey: { paths: ["/pk"], version: 2 } },
      { initialHeaders: { [RANGE_COUNT_HEADER]: String(L) } },
    );
    const { container: leases } = await createContainerIfNotExists(
      database,
      { ...LEAN_LEASE_CONTAINER, id: "leases" },
      { initialHeaders: { [RANGE_COUNT_HEADER]: "1" } },
    );
    const seedCount = L * MeasureDefaults.seedDocumentsPerLease;
    for (let n = 0; n < seedCount; n++) {
      await monitored.items.create({ id: `seed-${n}`, pk: `k${n % MeasureDefaults.writerKeys}`, n });
      if (n % 8 === 0) progress?.("seeding", n / seedCount);
    }
    progress?.("seeding", 1);
    phasesMs.seeding = Date.now() - t;

    // The writer runs from here to the end, at the scenario's rate × scale per wall-clock second.
    const writer = startWriter(monitored, scenario.writesPerSecond * scale);
    stopWriter = writer.stop;

    // Balancing: H processors, each with its own client (its own connections), as H hosts would.
    t = Date.now();
    const meterKeyLeases = `${DATABASE}/leases`;
    const meterKeyMonitored = `${DATABASE}/monitored`;
    const beforeStart = emu.meter.snapshot();
    const tallies: HostTally[] = [];
    const checkpointedTokens = new Set<string>();
    let measuring = false;
    for (let h = 0; h < H; h++) {
      const client = newClient();
      const tally: HostTally = {
        acquired: 0,
        released: 0,
        lost: 0,
        checkpoints: 0,
        pins: 0,
        pages: 0,
        documents: 0,
        lastChangeAt: Date.now(),
      };
      tallies.push(tally);
      const p = createChangeFeedProcessor<Record<string, unknown>>(
        {
          monitoredContainer: client.database(DATABASE).container(monitored.id),
          leaseContainer: client.database(DATABASE).container(leases.id),
          instanceName: `host-${String(h).padStart(2, "0")}`,
          ...scaled,
          handoffTimeout: 0,
        },
        async (docs) => {
          if (!measuring) return;
          tally.pages++;
          tally.documents += docs.length;
        },
      );
      p.on("acquired", () => {
        tally.acquired++;
        tally.lastChangeAt = Date.now();
      });
      p.on("released", () => {
        tally.released++;
        tally.lastChangeAt = Date.now();
      });
      p.on("lost", () => {
        tally.lost++;
        tally.lastChangeAt = Date.now();
      });
      p.on("checkpointed", (token) => {
        tally.checkpoints++;
        if (!checkpointedTokens.has(token)) {
          checkpointedTokens.add(token);
          tally.pins++;
        }
      });
      p.on("error", () => {});
      processors.push(p);
    }
    await Promise.all(processors.map((p) => p.start()));
    const steadyMs = MeasureDefaults.steadyAcquireIntervals * scaled.leaseAcquireInterval;
    const timeoutMs = Math.max(
      MeasureDefaults.balanceTimeoutMinMs,
      MeasureDefaults.balanceTimeoutAcquireIntervals * scaled.leaseAcquireInterval +
        scaled.leaseExpirationInterval,
    );
    const lo = Math.floor(L / H);
    const hi = Math.ceil(L / H);
    for (;;) {
      const tokens = processors.map((p) => p.ownedLeaseTokens());
      const owned = tokens.map((t) => t.length);
      const total = owned.reduce((a, b) => a + b, 0);
      // During a steal the thief owns the lease while the host it was taken from has not noticed yet (until its
      // next write of it): count each lease once, and the double claims apart.
      const distinct = new Set(tokens.flat()).size;
      const balanced = total === L && distinct === L && owned.every((n) => n >= lo && n <= hi);
      const lastChange = Math.max(...tallies.map((x) => x.lastChangeAt));
      const quietFor = Date.now() - lastChange;
      progress?.(
        "balancing",
        balanced ? Math.min(0.99, 0.5 + quietFor / steadyMs / 2) : (0.5 * distinct) / L,
        `${distinct}/${L} leases owned${total > distinct ? `, ${total - distinct} also still claimed by the host it was stolen from` : ""}`,
      );
      if (balanced && quietFor >= steadyMs) break;
      if (Date.now() - t > timeoutMs)
        throw new Error(
          `the ${H} hosts did not balance ${L} leases within ${timeoutMs} ms (owned: ${owned.join(", ")})`,
        );
      await abortableSleep(MeasureDefaults.balanceCheckMs);
    }
    const afterBalance = emu.meter.snapshot();
    progress?.("balancing", 1);
    phasesMs.balancing = Date.now() - t;
    // Start-up requests: everything but the steady traffic (renewals, checkpoints with documents, watch reads)
    // that also ran while the hosts balanced: creates, deletes, queries, reads, metadata; acquires and steals;
    // each lease's first checkpoint (its start position pinned, no documents); each host's first lease-feed read.
    const bootstrapByKind: Partial<Record<string, number>> = {};
    for (const [kind, e] of Object.entries(meterDelta(beforeStart, afterBalance, meterKeyLeases)))
      if (kind !== "replace" && kind !== "changeFeed" && e) bootstrapByKind[kind] = e.count;
    bootstrapByKind.acquires = tallies.reduce((a, x) => a + x.acquired, 0);
    bootstrapByKind.pins = tallies.reduce((a, x) => a + x.pins, 0);
    // A host's first lease-feed read pins its feed's start; the later ones are watch reads, steady traffic. The
    // meter cannot tell them apart, so count the hosts whose own counters show a lease-feed read by now.
    bootstrapByKind.feedPins = processors.filter((p) => p.counters.count.feed > 0).length;

    // Settling: one expiration interval.
    t = Date.now();
    await progressSleep(scaled.leaseExpirationInterval, "settling", progress);
    phasesMs.settling = Date.now() - t;

    // Measuring.
    t = Date.now();
    const tally0 = tallies.map((x) => ({ ...x }));
    const counters0 = processors.map((p) => ({ ...p.counters.count }));
    const written0 = writer.stats();
    const m0 = emu.meter.snapshot();
    measuring = true;
    const w0 = performance.now();
    await progressSleep(windowMs, "measuring", progress);
    const m1 = emu.meter.snapshot();
    const wallMs = performance.now() - w0;
    measuring = false;
    const written1 = writer.stats();
    const counters1 = processors.map((p) => ({ ...p.counters.count }));
    const tally1 = tallies.map((x) => ({ ...x }));
    phasesMs.measuring = Date.now() - t;
    const owned = processors.map((p) => p.ownedLeaseTokens().length);
    stopWriter();
    await Promise.all(processors.map((p) => p.stop()));
    processors.length = 0;

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
    const [renewRow, checkpointRow, viewRow] = ours.leaseContainer;
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
        requestsPerHour: perHour(renewals + checkpoints + leaseFeed.count),
        ruPerHour: perHour((renewals + checkpoints) * ruPerReplace + leaseFeed.ru),
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
      if (kind === "replace" || kind === "changeFeed" || !e) continue;
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
  } finally {
    stopWriter();
    await Promise.allSettled(processors.map((p) => p.abandon()));
    for (const c of clients) c.dispose();
    await emu.close();
  }
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

/**
 * Writes small documents at `perSecond` a second (wall clock) on average as a Poisson stream (exponential gaps,
 * as the model assumes), each to a random one of MeasureDefaults.writerKeys partition keys.
 */
function startWriter(container: Container, perSecond: number) {
  let written = 0;
  let failed = 0;
  let stopped = false;
  let n = 0;
  let nextAt = performance.now();
  const gap = () => (-Math.log(1 - Math.random()) * 1000) / perSecond;
  const tick = () => {
    if (stopped) return;
    const now = performance.now();
    while (nextAt <= now) {
      nextAt += gap();
      const k = n++;
      container.items
        .create({ id: `w-${k}`, pk: `k${Math.floor(Math.random() * MeasureDefaults.writerKeys)}`, n: k })
        .then(
          () => {
            written++;
          },
          () => {
            failed++;
          },
        );
    }
    timer = setTimeout(tick, MeasureDefaults.writerTickMs);
  };
  let timer: NodeJS.Timeout | undefined = perSecond > 0 ? setTimeout(tick, 0) : undefined;
  return {
    stats: () => ({ written, failed }),
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The command line: options → request, progress bars, the table.

export interface MeasureCliOptions extends TuneCliOptions {
  scale?: string;
  window?: string;
  json?: boolean;
}

export function measureRequestFromOptions(o: MeasureCliOptions): CheckedMeasureRequest {
  const scenario = tuningInputFromOptions(o);
  return checkMeasureRequest({
    scenario,
    scale: o.scale === undefined ? MeasureDefaults.scale : parseScale(o.scale),
    windowMs: o.window === undefined ? MeasureDefaults.windowMs : parseDuration(o.window, "--window"),
  });
}

/** A one-line text progress bar per phase on stderr (only when stderr is a terminal). */
function progressBar(stream: NodeJS.WriteStream = process.stderr): ProgressFn | undefined {
  if (!stream.isTTY) return undefined;
  let current: Phase | undefined;
  const width = 30;
  return (phase, fraction, detail) => {
    if (current !== undefined && current !== phase) stream.write("\n");
    current = phase;
    const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
    stream.write(
      `\r${phase.padEnd(10)} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${String(Math.round(fraction * 100)).padStart(3)}%${detail ? ` ${detail}` : ""}\x1b[K`,
    );
    if (phase === "measuring" && fraction >= 1) {
      stream.write("\n");
      current = undefined;
    }
  };
}

/** Width of the row labels in the text table. */
const LABEL = 50;
const fmt = (n: number | null) => (n === null ? "—" : Math.round(n).toLocaleString("en-US"));
const pct = (n: number | null) => (n === null ? "—" : `${n > 0 ? "+" : ""}${n.toFixed(1)} %`);

export function formatMeasure(r: MeasureResult): string {
  const s = r.scenario;
  const sc = r.scaledIntervals;
  const out = [
    `${s.hosts} host(s) × ${s.leases} lease(s), ${s.writesPerSecond} changes/s; renew ${s.leaseRenewIntervalMs} ms, acquire ${s.leaseAcquireIntervalMs} ms, expiration ${s.leaseExpirationIntervalMs} ms, poll ${s.feedPollDelayMs} ms, watch ${s.leaseWatchIntervalMs} ms, maxCheckpointDelay ${s.maxCheckpointDelayMs} ms`,
    `measured on the embedded emulator with ${s.hosts} real processor(s) and a writer, every interval ÷ ${r.scale} (renew ${sc.leaseRenewInterval} ms, acquire ${sc.leaseAcquireInterval} ms, expiration ${sc.leaseExpirationInterval} ms, poll ${sc.feedPollDelay} ms, watch ${sc.leaseWatchInterval} ms), window ${(r.window.wallMs / 1000).toFixed(1)} s wall = ${(r.window.scenarioMs / 1000).toFixed(0)} s of scenario; per scenario hour:`,
    "",
    `  ${"this processor".padEnd(LABEL)}${"model req/h".padStart(12)}${"measured".padStart(12)}${"dev".padStart(10)}${"model RU/h".padStart(12)}${"measured".padStart(12)}${"dev".padStart(10)}`,
  ];
  for (const row of r.rows) {
    out.push(
      `  ${`${row.container}: ${row.what}`.slice(0, LABEL - 1).padEnd(LABEL)}${fmt(row.model.requestsPerHour).padStart(12)}${fmt(row.measured.requestsPerHour).padStart(12)}${pct(row.deviationPct.requests).padStart(10)}${fmt(row.model.ruPerHour).padStart(12)}${fmt(row.measured.ruPerHour).padStart(12)}${pct(row.deviationPct.ru).padStart(10)}${row.meaningful ? "" : "  (too few to judge)"}`,
    );
  }
  out.push(
    `  within ±${r.goal.pct} %: ${r.goal.within} of ${r.goal.judged} judged rows`,
    "",
    "  requests the model has no row for (in the window, per scenario hour):",
  );
  if (r.unaccounted.length === 0) out.push("    none");
  for (const u of r.unaccounted)
    out.push(
      `    ${u.container}: ${u.what} (${u.kind})`.padEnd(62) +
        `${String(u.countInWindow).padStart(6)} → ${fmt(u.requestsPerHour)}/h, ${fmt(u.ruPerHour)} RU/h`,
    );
  out.push(
    "",
    `  start-up (bootstrap until balanced, ${(r.bootstrap.balanceMs / 1000).toFixed(1)} s): model ${r.bootstrap.model} lease-container requests, measured ${r.bootstrap.measured} (${pct(r.bootstrap.deviationPct)}): ${Object.entries(
      r.bootstrap.byKind,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
    `  writer: ${r.writer.perScenarioSecond} changes per scenario second (asked ${r.writer.intendedPerSecond})${r.writer.failed ? `, ${r.writer.failed} failed` : ""}`,
    "",
    "  model for the same scenario (lease container requests/h, RU/s):",
    `    this processor                      ${fmt(r.model.ours.leaseRequestsPerHour).padStart(10)} ${r.model.ours.leaseRuPerSecond.toFixed(2).padStart(8)}`,
    `    this processor without the watch    ${fmt(r.model.oursWithoutWatch.leaseRequestsPerHour).padStart(10)} ${r.model.oursWithoutWatch.leaseRuPerSecond.toFixed(2).padStart(8)}`,
    `    .NET processor / Functions trigger  ${fmt(r.model.dotnet.leaseRequestsPerHour).padStart(10)} ${r.model.dotnet.leaseRuPerSecond.toFixed(2).padStart(8)}`,
  );
  return out.join("\n");
}

/** The `tune --measure` command: one line and exit 1 for bad input (thrown as CliInputError to the caller). */
export async function runTuneMeasure(o: MeasureCliOptions): Promise<void> {
  const req = measureRequestFromOptions(o);
  const result = await measureScenario(req, progressBar());
  console.log(o.json ? JSON.stringify(result, null, 2) : formatMeasure(result));
}
