/**
 * The lease cost model behind `cosmos-feed tune` (docs/tuning.md): requests and RU per hour that a change feed
 * trigger costs on its lease container and on the monitored container, for this processor and for the .NET
 * processor / Azure Functions trigger, and the failover and hand-off bounds the four intervals buy. The request
 * counts follow each algorithm (docs/changefeed.md, "Lease-container cost model"; measured there: 6,990/h vs the
 * model's 6,988 at 4 hosts × 32 leases); RU per request are the emulator's documented charges (RuModel), which
 * approximate the service's for ~1 KiB documents.
 */
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { ChangeFeedDefaults, renewDue } from "../options.js";

/** A trigger deployment to price: hosts, leases, write rate and the processor's timings (ms). */
export interface TuningInput {
  /** Hosts running the trigger. */
  hosts: number;
  /** Leases (one per physical partition of the monitored container). */
  leases: number;
  /** Changes per second written to the monitored container, spread evenly over the leases. */
  writesPerSecond: number;
  /** Lease renewal interval (ms). */
  leaseRenewIntervalMs: number;
  /** Balancing round interval (ms). */
  leaseAcquireIntervalMs: number;
  /** Lease expiration interval (ms). */
  leaseExpirationIntervalMs: number;
  /** Wait after an empty feed read (ms). */
  feedPollDelayMs: number;
  /** This processor's lease watch slot (ms); 0 = no watch. Default: ChangeFeedDefaults.leaseWatchInterval. */
  leaseWatchIntervalMs?: number;
  /** This processor's checkpoint coalescing (ms). Default: ChangeFeedDefaults.maxCheckpointDelay. */
  maxCheckpointDelayMs?: number;
}

/** One source of requests and its cost. */
export interface CostRow {
  /** What makes the requests (e.g. "renewals"). */
  what: string;
  /** Requests per hour. */
  requestsPerHour: number;
  /** Request units per hour (RU). */
  ruPerHour: number;
}

/** What one processor implementation costs on a deployment. */
export interface AlgorithmCost {
  /** Requests to the lease container, by source. */
  leaseContainer: CostRow[];
  /** Requests to the monitored container, by source. */
  monitoredContainer: CostRow[];
  /** One-time requests on the lease container when the trigger first starts (lease documents, info, lock). */
  bootstrapRequests: number;
  /** Lease container requests per hour, in total. */
  leaseRequestsPerHour: number;
  /** Lease container RU per second, in total. */
  leaseRuPerSecond: number;
  /** Monitored container RU per second, in total. */
  monitoredRuPerSecond: number;
  /** A crashed host's leases are taken between these (ms). */
  failoverMs: { min: number; max: number };
  /** A gracefully stopping host's leases are taken by others within (ms). */
  handoffMs: number;
}

/** The model's answer for one input. */
export interface TuningResult {
  /** The input, defaults applied. */
  input: Required<TuningInput>;
  /** This processor's cost. */
  ours: AlgorithmCost;
  /** .NET's processor's cost, for the same input. */
  dotnet: AlgorithmCost;
}

/**
 * RU per request, from the emulator's model for the documents involved: a lease is ~0.6 KiB (5 RU per started
 * KiB written) and the lean lease container indexes only `id` and `_ts` (0.1 RU each), so a lease write is 5.2 RU.
 */
export const RequestRu = {
  leaseWrite: 5.2,
  leasePointRead: 1,
  /**
   * A change feed read, of the lease container or the monitored one: 1 RU when it finds nothing (304), else a page
   * of 2 RU plus 0.5 per document in it (a lease, on the lease container).
   */
  feedEmpty: 1,
  feedPageBase: 2,
  feedPerDocument: 0.5,
  allLeasesQuery: (leases: number) => 2.3 + 0.05 * leases + Math.ceil((leases * 0.6) / 1) * 1,
} as const;

const HOUR = 3_600_000;

/** The tuning input is impossible (code "InvalidTuningInput", status 400); the message lists each problem. */
export class InvalidTuningInputError extends CosmosFeedError {
  constructor(message: string) {
    super(message, { statusCode: 400 });
  }
}

/** Applies the defaults to `i` and checks it; throws InvalidTuningInputError listing every problem. */
export function validateTuningInput(i: TuningInput): Required<TuningInput> {
  const problems: string[] = [];
  const positive = (name: keyof TuningInput, v: number | undefined, min = 1) => {
    if (v === undefined || !Number.isFinite(v) || v < min)
      problems.push(`${name} must be ≥ ${min}; got ${v}.`);
  };
  positive("hosts", i.hosts);
  positive("leases", i.leases);
  positive("writesPerSecond", i.writesPerSecond, 0);
  positive("leaseRenewIntervalMs", i.leaseRenewIntervalMs);
  positive("leaseAcquireIntervalMs", i.leaseAcquireIntervalMs);
  positive("leaseExpirationIntervalMs", i.leaseExpirationIntervalMs);
  positive("feedPollDelayMs", i.feedPollDelayMs);
  if (i.leaseRenewIntervalMs >= i.leaseExpirationIntervalMs) {
    problems.push("leaseRenewIntervalMs must be below leaseExpirationIntervalMs.");
  }
  if (problems.length) throw new InvalidTuningInputError(problems.join(" "));
  return {
    leaseWatchIntervalMs: ChangeFeedDefaults.leaseWatchInterval,
    maxCheckpointDelayMs: ChangeFeedDefaults.maxCheckpointDelay,
    ...i,
  };
}

/**
 * One lease's reader per hour at `perLease` changes/s: poll cycles (a first read after each feedPollDelay), pages
 * with changes, empty reads, and q, the probability that a cycle's first read finds changes.
 */
function feedReads(perLeasePerSecond: number, pollMs: number) {
  // A cycle waits pollMs, then reads until a read comes back empty (304): a read that finds changes is followed at
  // once by another, so every cycle ends with exactly one empty read (measured: `tune --measure`). With changes
  // arriving as a Poisson stream, the first read finds something with probability q = 1 − e^(−rate × poll).
  const q = 1 - Math.exp(-perLeasePerSecond * (pollMs / 1000));
  const cycles = HOUR / pollMs;
  const pages = Math.min(perLeasePerSecond * 3600, cycles * q);
  return { cycles, q, pages, empty: cycles };
}

/**
 * Renewals per hour of one lease of ours: a renewal is written when the lease has not been written for `renewEvery`
 * (renewDue). A checkpoint is a write too, so a lease that checkpoints skips renewals: after a checkpoint (c per
 * hour), the j-th renewal comes when none of the polls before j × renewEvery found changes. Polls follow the
 * checkpoint every poll interval (plus a read's latency), so ⌈j·renewEvery/poll⌉ − 1 of them fall before it, and
 * the renewals per checkpoint are Σ_j (1 − q)^(⌈j·renewEvery/poll⌉ − 1) ≈ z / (1 − z), z = (1 − q)^(renewEvery/poll)
 * (measured: the whole number of polls matters, 6 and not 6.8 in 34 s at a 5 s poll). Idle (q = 0):
 * 3.6e6 / renewEvery.
 */
function oursRenewalsPerLease(renewEvery: number, pollMs: number, q: number, checkpoints: number): number {
  const idle = HOUR / renewEvery;
  if (q <= 0 || checkpoints <= 0) return idle;
  let perCheckpoint = 0;
  for (let j = 1; j <= 100_000; j++) {
    const term = (1 - q) ** (Math.ceil((j * renewEvery) / pollMs) - 1);
    perCheckpoint += term;
    // The sum only grows: once it reaches the idle rate, that is the answer (for a tiny q, long before 1e-9).
    if (checkpoints * perCheckpoint >= idle) return idle;
    if (term < 1e-9) break;
  }
  return checkpoints * perCheckpoint;
}

/**
 * RU of one lease-feed read by a host that reads every `gapMs`: the page holds the leases written since that
 * host's last read (each lease once, at its latest version), so 1 RU when none, else 2 + 0.5 per lease. A lease
 * checkpoints at most once per poll cycle (probability q per cycle), so within a gap of k = gap/poll cycles it was
 * checkpointed with probability q·k (k ≤ 1) or 1 − (1 − q)^k; its renewals are spaced at least renewEvery apart,
 * so one fell in the gap with probability r = min(1, renewals per lease × gap). Checkpoints are independent from
 * lease to lease, renewals are not: a renewal is due a fixed time after the last write, so leases taken together
 * renew together for ever, in `renewalGroups` groups spread over the renewal period, and a gap misses them all
 * with probability max(0, 1 − groups × r).
 */
function leaseFeedReadRu(
  gapMs: number,
  leases: number,
  perLease: { q: number; pollMs: number; renewalsPerHour: number; renewalGroups: number },
): number {
  const k = gapMs / perLease.pollMs;
  const checkpointed = k <= 1 ? perLease.q * k : 1 - (1 - perLease.q) ** k;
  const renewed = Math.min(1, (perLease.renewalsPerHour * gapMs) / HOUR);
  const written = 1 - (1 - checkpointed) * (1 - renewed);
  const pEmpty =
    (1 - checkpointed) ** leases * Math.max(0, 1 - Math.min(perLease.renewalGroups, leases) * renewed);
  return (
    pEmpty * RequestRu.feedEmpty +
    (1 - pEmpty) * RequestRu.feedPageBase +
    leases * written * RequestRu.feedPerDocument
  );
}

/**
 * Lease-feed reads per hour in all (ours): with the watch (T > 0) and two or more hosts, each host reads in its own
 * slot only (every H × T), so one read per T in all, each bringing every lease written in the H·T since that
 * host's last read (each once: a lease renewed twice meanwhile is one document); what happens in between reaches
 * the hosts through the fleet signal. Alone or without the watch, every A per host. `gapsMs`: one host's times
 * between reads.
 */
function leaseViewReads(hosts: number, acquireMs: number, watchMs: number) {
  if (watchMs > 0 && hosts >= 2) {
    return { watch: true, perHour: HOUR / watchMs, gapsMs: [hosts * watchMs] };
  }
  return { watch: false, perHour: (hosts * HOUR) / acquireMs, gapsMs: [acquireMs] };
}

/**
 * Groups of leases that renew together: the first host takes every lease in its first balancing round, then each
 * other host steals one lease per round (at the same moments when the hosts started together) until the shares
 * are even: 1 + ⌈(L − ⌈L/H⌉) / (H − 1)⌉ groups (1 for a lone host). That is .NET's strategy's cold start; the
 * fair-share plan moves the shares in one or two rounds, so its leases renew in fewer groups, and a lease-feed read
 * between them finds nothing more often than this counts. The model is within −2 to +11 % of the fleet simulation at 10–100
 * hosts (bench/results/fleet.json), within the ±15 % asked, and keeps this count.
 */
function renewalGroups(hosts: number, leases: number): number {
  if (hosts < 2) return 1;
  return 1 + Math.ceil((leases - Math.ceil(leases / hosts)) / (hosts - 1));
}

/**
 * Our one-time start-up requests on the lease container when H hosts start together, until every lease is owned
 * (measured by `tune --measure`, by kind): the first host reads the container's metadata (3), lists the leases
 * (3 queries: bootstrap, before creating, the view), reads `.info` twice, creates `.lock`, the L leases and `.info`
 * and deletes `.lock` (L + 3), pins its lease feed (1), acquires every lease (L), and each lease's first read pins
 * its start position with a checkpoint (L): 3L + 12. Every other host: metadata (2), two listings, `.info` read
 * before and after waiting for the `.lock` it could not create, the `.lock` read, the refused create, its lease-feed
 * pin: 9; and the leases it then takes from the first host, L − ⌈L/H⌉ writes.
 */
function oursBootstrapRequests(hosts: number, leases: number): number {
  return 3 * leases + 12 + 9 * (hosts - 1) + (leases - Math.ceil(leases / hosts));
}

/**
 * Prices `raw` for this processor and for .NET's: requests and RU per hour on each container, bootstrap
 * requests, failover and hand-off times. Throws InvalidTuningInputError for an impossible input.
 */
export function tune(raw: TuningInput): TuningResult {
  const i = validateTuningInput(raw);
  const {
    hosts: N,
    leases: L,
    leaseRenewIntervalMs: R,
    leaseAcquireIntervalMs: A,
    leaseExpirationIntervalMs: E,
  } = i;
  const T = i.leaseWatchIntervalMs;
  const perLease = i.writesPerSecond / L;
  const { pages, empty, q } = feedReads(perLease, i.feedPollDelayMs);
  const documentsPerHour = i.writesPerSecond * 3600;

  const monitored = (): CostRow[] => [
    {
      what: "feed polls that find nothing",
      requestsPerHour: L * empty,
      ruPerHour: L * empty * RequestRu.feedEmpty,
    },
    {
      what: "feed pages with changes",
      requestsPerHour: L * pages,
      ruPerHour: L * pages * RequestRu.feedPageBase + documentsPerHour * RequestRu.feedPerDocument,
    },
  ];

  // This processor: a renewal only when the lease would otherwise come close to expiring (renewDue: every
  // ⌈(E − 2R)/R⌉ × R), checkpoints coalesced over maxCheckpointDelay, and the lease view from the lease feed read
  // in turns.
  const oursRenewEvery = renewDue(R, E);
  // One checkpoint per cycle that found changes (its last read is empty, which writes the held checkpoint), at
  // most one per maxCheckpointDelay.
  const checkpointsPerLease = Math.min(
    pages,
    i.maxCheckpointDelayMs > 0 ? HOUR / i.maxCheckpointDelayMs : pages,
  );
  const oursCheckpoints = L * checkpointsPerLease;
  const oursRenewals = L * oursRenewalsPerLease(oursRenewEvery, i.feedPollDelayMs, q, checkpointsPerLease);
  const view = leaseViewReads(N, A, T);
  const perLeaseWrites = {
    q: checkpointsPerLease > 0 ? q : 0,
    pollMs: i.feedPollDelayMs,
    renewalsPerHour: oursRenewals / L,
    renewalGroups: renewalGroups(N, L),
  };
  const oursFeedRu =
    view.gapsMs.reduce((a, g) => a + leaseFeedReadRu(g, L, perLeaseWrites), 0) / view.gapsMs.length;
  const oursLease: CostRow[] = [
    {
      what: "renewals (replace)",
      requestsPerHour: oursRenewals,
      ruPerHour: oursRenewals * RequestRu.leaseWrite,
    },
    {
      what: "checkpoints (replace)",
      requestsPerHour: oursCheckpoints,
      ruPerHour: oursCheckpoints * RequestRu.leaseWrite,
    },
    {
      what: `lease view: lease feed reads ${view.watch ? "in turns" : "per host"}`,
      requestsPerHour: view.perHour,
      ruPerHour: view.perHour * oursFeedRu,
    },
  ];
  // Read only where a host's slots are further apart than a round (N × T > A); raised on events (not priced: idle).
  const signalled = view.watch && N * T > A;
  if (signalled) {
    oursLease.push({
      what: "fleet signal: a point read per host per balancing round",
      requestsPerHour: (N * HOUR) / A,
      ruPerHour: ((N * HOUR) / A) * RequestRu.leasePointRead,
    });
  }

  // .NET / Functions trigger: read + replace every R per lease, an all-leases query per host per A, a checkpoint per page.
  const dotnetRenewals = (L * 2 * HOUR) / R;
  const dotnetFinding = (N * HOUR) / A;
  const dotnetCheckpoints = L * pages;
  const dotnetLease: CostRow[] = [
    {
      what: "renewals (read + replace)",
      requestsPerHour: dotnetRenewals,
      ruPerHour: (dotnetRenewals / 2) * (RequestRu.leasePointRead + RequestRu.leaseWrite),
    },
    {
      what: "checkpoints (replace per page)",
      requestsPerHour: dotnetCheckpoints,
      ruPerHour: dotnetCheckpoints * RequestRu.leaseWrite,
    },
    {
      what: "balancing: all-leases query per host",
      requestsPerHour: dotnetFinding,
      ruPerHour: dotnetFinding * RequestRu.allLeasesQuery(L),
    },
  ];

  const total = (rows: CostRow[], k: "requestsPerHour" | "ruPerHour") => rows.reduce((a, r) => a + r[k], 0);
  const summarize = (
    lease: CostRow[],
    handoffMs: number,
    bootstrapRequests: number,
    noticeMs: number,
  ): AlgorithmCost => {
    const mon = monitored();
    return {
      leaseContainer: lease.map(roundRow),
      monitoredContainer: mon.map(roundRow),
      bootstrapRequests,
      leaseRequestsPerHour: Math.round(total(lease, "requestsPerHour")),
      leaseRuPerSecond: round2(total(lease, "ruPerHour") / 3600),
      monitoredRuPerSecond: round2(total(mon, "ruPerHour") / 3600),
      failoverMs: { min: E, max: E + noticeMs },
      handoffMs,
    };
  };
  return {
    input: i,
    // Ours hands each lease to a chosen successor, taken ~150 ms after its release (docs/changefeed.md).
    // When the successors' slots are further off than a round (N × T > A), the leases are released at once and the
    // successor takes them at its next round, told by the fleet signal.
    // In a fleet signalled: an expiry is noticed by the next slot's reader (within T), which raises the fleet signal;
    // the others look at their next round (within A).
    ours: summarize(
      oursLease,
      view.watch && N * T <= A ? 150 + T : A,
      oursBootstrapRequests(N, L),
      signalled ? T + A : A,
    ),
    // .NET releases; another host takes it at its next balancing round. Its bootstrap: the lease documents,
    // `.info` and `.lock`.
    dotnet: summarize(dotnetLease, A, L + 3, A),
  };
}

function roundRow(r: CostRow): CostRow {
  return { what: r.what, requestsPerHour: Math.round(r.requestsPerHour), ruPerHour: Math.round(r.ruPerHour) };
}
const round2 = (n: number) => Math.round(n * 100) / 100;
