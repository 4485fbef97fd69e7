import { badRequest } from "../errors.js";
import { documentSeqOfRid } from "../store/rid.js";
import { compareValues } from "./values.js";

/**
 * Where a resumed ORDER BY query starts: the .NET SDK (3.3x and later) resumes a cross-partition ORDER BY from its
 * continuation by sending each range the rewritten query unchanged plus `resumeFilter` in the query body
 * (`{"query", "parameters", "resumeFilter": {"value": [...], "rid"?, "exclude"}}`, its SqlQueryResumeFilter) instead
 * of a filter written into the WHERE clause: the backend returns only the rows after that point in the query's order.
 * `value` holds one resume value per ORDER BY item: a primitive, `[]` for undefined, or `{type, low, high}` (a hash)
 * for an array or object. `exclude`: the rows equal to the values were all returned already (ranges left of the
 * one the continuation came from). `rid`: of those equal rows, the ones from this document on (in the ORDER BY's
 * direction, as ties come) are still to come; the SDK skips the ones it returned itself.
 */
export interface ResumeFilter {
  value: unknown[];
  rid?: string;
  exclude: boolean;
}

/** A marker for an array/object resume value: only its type is comparable (the service compares hashes). */
const COMPLEX = Symbol("complex resume value");

export function parseResumeFilter(raw: unknown): ResumeFilter | undefined {
  if (raw === undefined || raw === null) return undefined;
  const f = raw as Partial<ResumeFilter>;
  if (
    typeof raw !== "object" ||
    !Array.isArray(f.value) ||
    f.value.length === 0 ||
    typeof f.exclude !== "boolean" ||
    (f.rid !== undefined && f.rid !== null && typeof f.rid !== "string")
  ) {
    throw badRequest(
      "resumeFilter must be {value: [one per ORDER BY item], rid?: string, exclude: boolean}.",
    );
  }
  return { value: f.value, rid: f.rid ?? undefined, exclude: f.exclude };
}

function resumeValue(v: unknown): unknown {
  if (Array.isArray(v)) {
    if (v.length === 0) return undefined;
    throw badRequest("A resume value that is an array must be empty (undefined).");
  }
  if (v !== null && typeof v === "object") return COMPLEX;
  return v;
}

function compareToResume(item: unknown, resume: unknown): number {
  if (resume === COMPLEX) {
    // Same kind of value (array or object): the service would compare hashes; treat it as the resume point.
    const kind = Array.isArray(item) ? -1 : item !== null && typeof item === "object" ? 0 : undefined;
    if (kind !== undefined) return 0;
    return compareValues(item, {});
  }
  return compareValues(item, resume);
}

interface OrderByRow {
  _rid?: unknown;
  orderByItems?: { item?: unknown }[];
}

/**
 * Keeps the rows of a rewritten ORDER BY query (`{_rid, orderByItems: [{item}], payload}`) that come after the
 * resume point; `desc` is the direction of each ORDER BY item.
 */
export function rowsAfterResumePoint(
  rows: readonly unknown[],
  filter: ResumeFilter,
  desc: readonly boolean[],
): number[] {
  if (filter.value.length !== desc.length) {
    throw badRequest(
      `The resumeFilter has ${filter.value.length} values but the query orders by ${desc.length} items.`,
    );
  }
  const resume = filter.value.map(resumeValue);
  const ridSeq = filter.rid === undefined ? undefined : documentSeqOfRid(filter.rid);
  const kept: number[] = [];
  rows.forEach((raw, index) => {
    const row = raw as OrderByRow;
    const items = Array.isArray(row.orderByItems) ? row.orderByItems : [];
    for (let i = 0; i < resume.length; i++) {
      const c = compareToResume(items[i]?.item, resume[i]);
      if (c !== 0) {
        if ((desc[i] ? -c : c) > 0) kept.push(index);
        return;
      }
    }
    if (filter.exclude) return;
    if (ridSeq === undefined || typeof row._rid !== "string") {
      kept.push(index);
      return;
    }
    const r = documentSeqOfRid(row._rid) - ridSeq;
    if ((desc[0] ? -r : r) >= 0) kept.push(index);
  });
  return kept;
}
