import { type Lease, REPLACES_PROPERTY } from "../leases/lease.js";

/**
 * Tokens of leases already replaced by a split or merge: leases naming a parent in `properties.replaces` whose
 * ranges tile the parent's range, from its min to its max without a gap. The parent's deletion never shows in the
 * latest-version lease feed, so a view keeps it (owned by its last owner, then expired) until someone tries to
 * take it; counted, it skews every host's fair share for an expiration interval after a split storm. A parent
 * whose children do not all exist yet (a replacement cut short) is not superseded: the range a missing child
 * would cover must still be taken and replaced.
 */
export function supersededTokens(leases: readonly Lease[]): Set<string> {
  const children = new Map<string, Lease[]>();
  for (const l of leases) {
    const parent = l.properties[REPLACES_PROPERTY];
    if (parent === undefined || parent === l.leaseToken) continue;
    const list = children.get(parent);
    if (list) list.push(l);
    else children.set(parent, [l]);
  }
  const out = new Set<string>();
  if (children.size === 0) return out;
  for (const l of leases) {
    const kids = children.get(l.leaseToken);
    if (kids && l.feedRange && tiles(kids, l.feedRange)) out.add(l.leaseToken);
  }
  return out;
}

function tiles(kids: readonly Lease[], range: { min: string; max: string }): boolean {
  const ranges = kids.map((k) => k.feedRange);
  if (ranges.some((r) => r === undefined)) return false;
  const sorted = (ranges as { min: string; max: string }[]).sort((a, b) =>
    a.min < b.min ? -1 : a.min > b.min ? 1 : 0,
  );
  let at = range.min;
  for (const r of sorted) {
    if (r.min !== at) return false;
    at = r.max;
  }
  return at === range.max;
}
