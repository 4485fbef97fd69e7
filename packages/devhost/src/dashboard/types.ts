/**
 * The JSON of `GET /_dev/api/state`, shared by the server (packages/devhost/src/dashboard) and the page (client/). Types only:
 * the browser bundle imports it with `import type`, so nothing of it reaches the page at run time.
 */

/** A panel's data, or why it has none this time (its source failed; the other panels are unaffected). */
export type Panel<T> = { ok: true; data: T } | { ok: false; error: string; notConfigured?: boolean };

export interface LeaseView {
  id: string;
  leaseToken: string;
  /** EPK range of a version-1 lease, "min–max". */
  range: string | null;
  owner: string | null;
  /** The owner is this dev host's processor for this trigger. */
  thisHost: boolean;
  continuation: string | null;
  lastWriteAgeMs: number;
  /** When the lease expires if not written again (last write + leaseExpirationInterval), ISO; null when unowned. */
  expiresAt: string | null;
  expired: boolean;
  estimatedLag: number | null;
}

export interface TriggerLeases {
  functionName: string;
  monitored: string;
  /** "db/container" */
  leaseContainer: string;
  prefix: string;
  leaseExpirationIntervalMs: number;
  /** This host's owner name for this trigger (its processor's instance name), when its listener is running. */
  thisHostOwner: string | null;
  /** Per owner ("(none)" for unowned): its leases. */
  owners: { owner: string; thisHost: boolean; leases: number }[];
  leases: LeaseView[];
  /** Why lag could not be estimated, when it could not. */
  lagError?: string;
  /** Why this trigger's leases could not be read (the other triggers are still shown). */
  error?: string;
  /** Set on the row of the durable task hub's dispatch leases (not a trigger's): the hub's name. */
  taskHub?: string;
}

export interface Handoff {
  at: string;
  functionName: string;
  leaseToken: string;
  from: string | null;
  to: string | null;
}

export interface LeasesData {
  triggers: TriggerLeases[];
  /** Owner changes seen between refreshes, newest first. */
  handoffs: Handoff[];
}

export interface LockHolder {
  name: string;
  owner: string;
  acquiredAt: string | null;
  ttlSeconds: number;
  /** ms until the lock's TTL runs out (0 when expired but not yet purged). */
  remainingMs: number;
  expired: boolean;
  /** Waiters queued for it. */
  waiters: number;
}

export interface LocksData {
  container: string;
  holders: LockHolder[];
}

export interface InstanceRow {
  instanceId: string;
  name: string;
  runtimeStatus: string;
  createdTime: string;
  lastUpdatedTime: string;
  /**
   * JSON text of the output — for a Failed instance, of its failure (the reason the page shows) — cut to its first
   * 500 characters; null when it has none.
   */
  output: string | null;
}

export interface DurableData {
  hubName: string;
  container: string;
  counts: Record<string, number>;
  total: number;
  latest: InstanceRow[];
}

export interface ContainerRate {
  /** "db/container" as the meter names it. */
  container: string;
  /** The app's RU/s (meter − the dashboard's own reads) over the rate window. */
  appRuPerSecond: number;
  /** The dashboard's own RU/s on this container over the rate window. */
  dashboardRuPerSecond: number;
  /** Since the dashboard started: RU the meter counted, and of that the dashboard's and the app's (the rest). */
  meterRuTotal: number;
  dashboardRuTotal: number;
  appRuTotal: number;
}

export interface RuPoint {
  /** ms since epoch, the end of the interval. */
  t: number;
  /** App RU/s per container over the interval ending at t. */
  app: Record<string, number>;
  /** The dashboard's own RU/s (all containers) over the interval. */
  dashboard: number;
}

export interface RuData {
  /** Where the meter is read: "embedded emulator", "emulator at http://…". */
  source: string;
  windowMs: number;
  containers: ContainerRate[];
  history: RuPoint[];
}

export interface DashboardState {
  generatedAt: string;
  host: { baseUrl: string; pid: number };
  settings: { pollIntervalMs: number; hiddenPollIntervalMs: number; historyMs: number };
  leases: Panel<LeasesData>;
  locks: Panel<LocksData>;
  durable: Panel<DurableData>;
  ru: Panel<RuData>;
}
