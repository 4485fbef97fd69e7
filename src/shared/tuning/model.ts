/**
 * The lease cost model behind `cosmos-feed tune` (docs/tuning.md): requests and RU per hour that a change feed
 * trigger costs on its lease container and on the monitored container, for this processor and for the .NET
 * processor / Azure Functions trigger, and the failover and hand-off bounds the four intervals buy. The request
 * counts follow each algorithm (docs/changefeed.md, "Lease-container cost model"; measured there: 6,990/h vs the
 * model's 6,988 at 4 hosts × 32 leases); RU per request are the emulator's documented charges (RuModel), which
 * approximate the service's for ~1 KiB documents.
 */

export interface TuningInput {
  /** Hosts running the trigger. */
  hosts: number;
  /** Leases (one per physical partition of the monitored container). */
  leases: number;
  /** Changes per second written to the monitored container, spread evenly over the leases. */
  writesPerSecond: number;
  leaseRenewIntervalMs: number;
  leaseAcquireIntervalMs: number;
  leaseExpirationIntervalMs: number;
  feedPollDelayMs: number;
  /** This processor's lease watch slot (ms); 0 = no watch. Default 1000. */
  leaseWatchIntervalMs?: number;
  /** This processor's checkpoint coalescing (ms). Default 1000. */
  maxCheckpointDelayMs?: number;
}

export interface CostRow {
  what: string;
  requestsPerHour: number;
  ruPerHour: number;
}

export interface AlgorithmCost {
  leaseContainer: CostRow[];
  monitoredContainer: CostRow[];
  /** One-time requests on the lease container when the trigger first starts (lease documents, info, lock). */
  bootstrapRequests: number;
  leaseRequestsPerHour: number;
  leaseRuPerSecond: number;
  monitoredRuPerSecond: number;
  /** A crashed host's leases are taken between these (ms). */
  failoverMs: { min: number; max: number };
  /** A gracefully stopping host's leases are taken by others within (ms). */
  handoffMs: number;
}

export interface TuningResult {
  input: Required<TuningInput>;
  ours: AlgorithmCost;
  dotnet: AlgorithmCost;
}

/** RU per request, from the emulator's model for the documents involved (a lease is ~0.6 KiB, lean index). */
export const RequestRu = {
  leaseWrite: 5,
  leasePointRead: 1,
  leaseFeedEmpty: 1,
  monitoredFeedEmpty: 1,
  monitoredFeedPageBase: 2,
  monitoredFeedPerDocument: 0.5,
  allLeasesQuery: (leases: number) => 2.3 + 0.05 * leases + Math.ceil((leases * 0.6) / 1) * 1,
} as const;

const HOUR = 3_600_000;

export class InvalidTuningInputError extends Error {}

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
  return { leaseWatchIntervalMs: 1_000, maxCheckpointDelayMs: 1_000, ...i };
}

/** Pages per hour one lease's reader returns with changes, and its empty polls, at `perLease` changes/s. */
function feedReads(perLeasePerSecond: number, pollMs: number) {
  // A poll that finds changes is followed at once by another read; an idle one waits pollMs. With changes arriving
  // as a Poisson stream, a poll finds something with probability 1 − e^(−rate × poll).
  const pFound = 1 - Math.exp(-perLeasePerSecond * (pollMs / 1000));
  const pollsPerHour = HOUR / pollMs;
  const pages = Math.min(perLeasePerSecond * 3600, pollsPerHour * pFound);
  const empty = pollsPerHour * (1 - pFound);
  return { pages, empty };
}

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
  const { pages, empty } = feedReads(perLease, i.feedPollDelayMs);
  const documentsPerHour = i.writesPerSecond * 3600;

  const monitored = (): CostRow[] => [
    {
      what: "feed polls that find nothing",
      requestsPerHour: L * empty,
      ruPerHour: L * empty * RequestRu.monitoredFeedEmpty,
    },
    {
      what: "feed pages with changes",
      requestsPerHour: L * pages,
      ruPerHour:
        L * pages * RequestRu.monitoredFeedPageBase + documentsPerHour * RequestRu.monitoredFeedPerDocument,
    },
  ];

  // This processor: a renewal only when the lease would otherwise come close to expiring (every ⌈(E − 2R)/R⌉ × R),
  // checkpoints coalesced over maxCheckpointDelay, and the lease view from the lease feed read in turns.
  const oursRenewEvery = Math.max(1, Math.ceil((E - 2 * R) / R)) * R;
  const oursCheckpoints =
    L * Math.min(pages, i.maxCheckpointDelayMs > 0 ? HOUR / i.maxCheckpointDelayMs : pages);
  // A lease that checkpoints is renewed by it: renewals are only needed for the idle share.
  const idleShare = pages === 0 ? 1 : Math.max(0, 1 - (oursCheckpoints / L) * (oursRenewEvery / HOUR));
  const oursRenewals = (L * HOUR * idleShare) / oursRenewEvery;
  const watchOn = T > 0 && N >= 2 && N * T <= A;
  const oursFinding = watchOn ? HOUR / T : N >= 2 ? (N * HOUR) / A : HOUR / A;
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
    watchOn
      ? {
          what: "lease view: lease feed reads in turns",
          requestsPerHour: oursFinding,
          ruPerHour: oursFinding * RequestRu.leaseFeedEmpty,
        }
      : {
          what: "lease view: lease feed reads per host",
          requestsPerHour: oursFinding,
          ruPerHour: oursFinding * RequestRu.leaseFeedEmpty,
        },
  ];

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
  const summarize = (lease: CostRow[], handoffMs: number): AlgorithmCost => {
    const mon = monitored();
    return {
      leaseContainer: lease.map(roundRow),
      monitoredContainer: mon.map(roundRow),
      bootstrapRequests: L + 3,
      leaseRequestsPerHour: Math.round(total(lease, "requestsPerHour")),
      leaseRuPerSecond: round2(total(lease, "ruPerHour") / 3600),
      monitoredRuPerSecond: round2(total(mon, "ruPerHour") / 3600),
      failoverMs: { min: E, max: E + A },
      handoffMs,
    };
  };
  return {
    input: i,
    // Ours hands each lease to a chosen successor, taken ~150 ms after its release (docs/changefeed.md).
    ours: summarize(oursLease, watchOn ? 150 + T : A),
    // .NET releases; another host takes it at its next balancing round.
    dotnet: summarize(dotnetLease, A),
  };
}

function roundRow(r: CostRow): CostRow {
  return { what: r.what, requestsPerHour: Math.round(r.requestsPerHour), ruPerHour: Math.round(r.ruPerHour) };
}
const round2 = (n: number) => Math.round(n * 100) / 100;
