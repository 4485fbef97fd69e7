import { HANDOFF_FROM_PROPERTY, HANDOFF_PROPERTY, isAvailable, type Lease } from "../leases/lease.js";

/**
 * Hosts take turns reading the lease container's change feed, so the container is read about once per
 * `watchSlot` in total whatever the number of hosts (not once per slot per host). Wall-clock slot k (of
 * `watchSlot` ms) belongs to the host of rank k mod N among the N participants sorted by name. Hosts agree on
 * the participants because they derive them from the same lease documents; when they briefly disagree (a host
 * joined or left since someone's last read), slots overlap or one is skipped: cost or latency, never safety.
 */
export interface WatchSchedule {
  /** Sorted instance names: the live owners in the view, plus this host. */
  participants: string[];
  /** Slot length (ms). */
  watchSlot: number;
}

/** Live owners (not expired) of the given leases, plus `me`, sorted by name (code-unit order, as every host sorts). */
export function watchParticipants(
  leases: readonly Lease[],
  me: string,
  nowMs: number,
  expirationMs: number,
): string[] {
  const names = new Set<string>([me]);
  for (const l of leases) if (!isAvailable(l, nowMs, expirationMs)) names.add(l.owner as string);
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Start (ms since epoch) of `host`'s next slot strictly after `nowMs`, or undefined if it does not participate. */
export function nextSlotStart(schedule: WatchSchedule, host: string, nowMs: number): number | undefined {
  const n = schedule.participants.length;
  const rank = schedule.participants.indexOf(host);
  if (rank < 0) return undefined;
  const slot = schedule.watchSlot;
  const current = Math.floor(nowMs / slot);
  let k = current + ((((rank - current) % n) + n) % n);
  if (k * slot <= nowMs) k += n;
  return k * slot;
}

/** Whose the slot starting at `slotStart` is (the participant of rank k mod N for slot k, as nextSlotStart plans). */
export function slotOwner(schedule: WatchSchedule, slotStart: number): string | undefined {
  const n = schedule.participants.length;
  return n === 0 ? undefined : schedule.participants[Math.round(slotStart / schedule.watchSlot) % n];
}

/**
 * The host a lease was handed to, while that hand-off is fresh: released (Owner null) with
 * `properties.handoffTo`, written less than `freshForMs` ago.
 */
export function handedTo(lease: Lease, nowMs: number, freshForMs: number): string | undefined {
  if (lease.owner !== null) return undefined;
  const to = lease.properties[HANDOFF_PROPERTY];
  return to && nowMs - lease.timestampMs < freshForMs ? to : undefined;
}

/**
 * The hosts that are stopping, as far as these leases tell: each released one of them to a successor
 * (`properties.handoffFrom`) less than `freshForMs` ago. None of them is a successor: a lease handed to one is an
 * ordinary available lease, and a stopping host does not hand its leases to another.
 */
export function stoppingHosts(leases: readonly Lease[], nowMs: number, freshForMs: number): Set<string> {
  const out = new Set<string>();
  for (const l of leases) {
    const from = l.owner === null ? l.properties[HANDOFF_FROM_PROPERTY] : undefined;
    if (from && nowMs - l.timestampMs < freshForMs) out.add(from);
  }
  return out;
}

/**
 * Spreads a stopping host's leases over the other live hosts, each next lease to the host with the fewest
 * (counting what it already owns), so the survivors end up balanced without stealing. Ties go by a hash of
 * `stopping` and the host's name (by name when `stopping` is not given): hosts stopping at once (a scale-in, a
 * rolling deploy's batch) then spread their leases over different successors instead of all over the same ones.
 */
export function assignSuccessors(
  mine: readonly Lease[],
  ownedCounts: ReadonlyMap<string, number>,
  stopping?: string,
): Map<string, Lease[]> {
  const load = new Map(ownedCounts);
  const out = new Map<string, Lease[]>();
  if (load.size === 0) return out;
  const rank = new Map(
    [...load.keys()].map((h) => [h, stopping === undefined ? 0 : fnv1a(`${stopping}\0${h}`)]),
  );
  const before = (a: string, b: string) => {
    const ra = rank.get(a) as number;
    const rb = rank.get(b) as number;
    return ra !== rb ? ra < rb : a < b;
  };
  for (const lease of mine) {
    let best: string | undefined;
    for (const [host, count] of load) {
      if (best === undefined) {
        best = host;
        continue;
      }
      const bestCount = load.get(best) as number;
      if (count < bestCount || (count === bestCount && before(host, best))) best = host;
    }
    const to = best as string;
    load.set(to, (load.get(to) as number) + 1);
    out.set(to, [...(out.get(to) ?? []), lease]);
  }
  return out;
}

/** 32-bit FNV-1a of a string's UTF-16 code units: a stable, well-spread order, not a security measure. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
