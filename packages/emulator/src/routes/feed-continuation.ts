import { badRequest } from "../errors.js";
import type { PhysicalRange, Scope } from "../store/container.js";

/**
 * The change feed continuation (the etag sent back as If-None-Match). Each physical range counts its own LSNs, so a
 * read of one range continues from one LSN of it — `"42"`, what the service sends and the SDKs keep — and a read
 * over several ranges (no range named: the whole container, or an EPK window or key prefix across ranges) from one
 * LSN per range: `"0:42,1:17"`.
 */

/** The continuation of a page: `"<lsn>"` for one range, `"<id>:<lsn>,…"` for several. */
export function formatContinuation(continuation: ReadonlyMap<PhysicalRange, number>): string {
  const parts = [...continuation];
  if (parts.length === 1) return `"${parts[0][1]}"`;
  return `"${parts.map(([r, lsn]) => `${r.id}:${lsn}`).join(",")}"`;
}

/** The continuation to send for "now": each range's current LSN. */
export function currentContinuation(scope: Scope): string {
  return formatContinuation(new Map(scope.ranges.map((r) => [r, r.lastLsn])));
}

function invalid(inm: string, why: string): never {
  throw badRequest(
    `Invalid Continuation Token: the change feed continuation (If-None-Match) '${inm}' ${why}.`,
  );
}

function lsnOf(inm: string, text: string): number {
  const lsn = Number(text);
  if (text === "" || !Number.isSafeInteger(lsn) || lsn < 0)
    invalid(inm, "is not an LSN etag this emulator issued");
  return lsn;
}

/**
 * Where each range of the scope starts. One LSN applies to every range of the scope (a range's own continuation
 * read on that range or, after a split, on a child: children go on from their parent's LSN). Per-range LSNs apply
 * to the ranges they name, or to their children after a split; a range merged from two named ones starts after the
 * lower of the two (it may repeat some of the other's changes, never skips one). A range the continuation does not
 * know starts from its beginning.
 */
export function parseContinuation(inm: string, scope: Scope): Map<PhysicalRange, number> {
  const text = inm.replace(/^W\//, "").replace(/"/g, "");
  const start = new Map<PhysicalRange, number>();
  if (!text.includes(":")) {
    const lsn = lsnOf(inm, text);
    for (const r of scope.ranges) start.set(r, lsn);
  } else {
    const byId = new Map<string, number>();
    for (const part of text.split(",")) {
      const at = part.lastIndexOf(":");
      const id = part.slice(0, at);
      if (at <= 0 || byId.has(id)) invalid(inm, "is not an LSN etag this emulator issued");
      byId.set(id, lsnOf(inm, part.slice(at + 1)));
    }
    for (const r of scope.ranges) {
      const own = byId.get(r.id);
      const inherited = r.parents.map((p) => byId.get(p)).filter((x): x is number => x !== undefined);
      start.set(r, own ?? (inherited.length > 0 ? Math.min(...inherited) : 0));
    }
  }
  for (const [r, lsn] of start) {
    if (lsn > r.lastLsn) invalid(inm, `is ahead of partition key range ${r.id} (LSN ${r.lastLsn})`);
  }
  return start;
}
