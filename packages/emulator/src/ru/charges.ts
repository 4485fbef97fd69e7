/**
 * The emulator's request-unit model. It is a documented approximation of the service
 * (docs/emulator.md#request-units), stable so that tests and the lease-interval tuner can reason about it:
 * every figure below is in RU.
 */
export const RuModel = {
  /** Point read of a document up to 1 KiB; larger ones follow PUBLISHED_CHARGES_BY_KIB. */
  pointReadMinimum: 1,
  /**
   * Create / replace / upsert / delete of a document up to 1 KiB (the published 4.95, kept at the 5 the lease cost
   * model was measured with); larger ones follow PUBLISHED_CHARGES_BY_KIB, never less than this.
   */
  writeMinimum: 5,
  /** Extra per indexed leaf property (zero when the container's indexingMode is "none"). */
  writePerIndexedPath: 0.1,
  /** Patch adds a read of the current document to the write. */
  patchReadSurcharge: 1,
  /** Query: fixed cost, plus per document read (scanned), plus per started KiB returned. */
  queryBase: 2.3,
  queryPerDocumentRead: 0.05,
  queryPerKiBReturned: 1,
  /** Change feed page with changes: fixed cost plus per document returned. */
  changeFeedBase: 2,
  changeFeedPerDocument: 0.5,
  /** Change feed poll that finds nothing (304). */
  changeFeedEmpty: 1,
  /** A data-plane request that failed (404, 409, 412, 400 …) after being admitted. */
  failedRequest: 1,
  /** Metadata reads (account, databases, containers, partition key ranges); never throttled. */
  metadata: 1,
} as const;

const KiB = 1024;
const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * The service's published charges by document size: [KiB, point read RU, write RU]
 * (learn.microsoft.com/azure/cosmos-db/understand-request-unit-consumption, "Document size"; reads at session or
 * eventual consistency). Sizes in between are interpolated linearly; the item limit is 2 MB, the table's last row.
 */
export const PUBLISHED_CHARGES_BY_KIB: readonly (readonly [number, number, number])[] = [
  [1, 1.0, 4.95],
  [2, 1.04, 6.29],
  [4, 1.14, 6.67],
  [8, 1.33, 7.04],
  [16, 1.67, 9.52],
  [32, 2.19, 11.23],
  [64, 4.76, 22.67],
  [128, 9.95, 48.19],
  [256, 20.28, 98.29],
  [512, 40.95, 184.57],
  [1024, 145.9, 625.0],
  [2048, 291.8, 1250.0],
];

/** The published charge (column 1: read, 2: write) of a document of `bytes`, interpolated between the rows. */
function published(bytes: number, column: 1 | 2): number {
  const kib = bytes / KiB;
  const rows = PUBLISHED_CHARGES_BY_KIB;
  if (kib <= rows[0][0]) return rows[0][column];
  for (let i = 1; i < rows.length; i++) {
    const [hiKiB] = rows[i];
    if (kib <= hiKiB) {
      const [loKiB] = rows[i - 1];
      const lo = rows[i - 1][column];
      const hi = rows[i][column];
      return lo + ((kib - loKiB) / (hiKiB - loKiB)) * (hi - lo);
    }
  }
  const last = rows[rows.length - 1];
  return (last[column] * kib) / last[0];
}

/** Number of leaf (scalar) properties of a JSON value, the paths a consistent index writes. */
export function countLeafPaths(value: unknown, limit = 10_000): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && count < limit) {
    const v = stack.pop();
    if (v !== null && typeof v === "object") {
      for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push(child);
    } else {
      count++;
    }
  }
  return count;
}

/** An indexing policy's path rules as the emulator stores them (normalizeIndexingPolicy). */
export interface IndexPathPolicy {
  indexingMode?: unknown;
  includedPaths?: unknown;
  excludedPaths?: unknown;
}

/** System properties the service always indexes in consistent mode, whatever the policy says. */
const ALWAYS_INDEXED = new Set(["id", "_ts"]);

interface PathRule {
  segments: string[];
  /** `/a/?`: exactly the scalar at /a; `/a/*`: /a and everything below it. */
  exact: boolean;
  included: boolean;
}

function parseRule(raw: unknown, included: boolean): PathRule | undefined {
  const path = raw !== null && typeof raw === "object" ? (raw as { path?: unknown }).path : undefined;
  if (typeof path !== "string" || !path.startsWith("/")) return undefined;
  const parts = path.slice(1).split("/");
  const last = parts.pop();
  if (last !== "?" && last !== "*") return undefined;
  const segments = parts.map((p) =>
    p.length >= 2 && p.startsWith('"') && p.endsWith('"') ? p.slice(1, -1) : p,
  );
  return { segments, exact: last === "?", included };
}

/**
 * Parsed rules by policy object, so a write does not parse them again. A container's policy is never changed in
 * place: a replace installs a new object (normalizeIndexingPolicy builds one), so an entry cannot go stale.
 */
const rulesByPolicy = new WeakMap<IndexPathPolicy, PathRule[]>();

function rulesOf(policy: IndexPathPolicy): PathRule[] {
  let rules = rulesByPolicy.get(policy);
  if (!rules) {
    const list = (v: unknown, included: boolean) =>
      Array.isArray(v)
        ? v.map((r) => parseRule(r, included)).filter((r): r is PathRule => r !== undefined)
        : [];
    rules = [...list(policy.includedPaths, true), ...list(policy.excludedPaths, false)];
    rulesByPolicy.set(policy, rules);
  }
  return rules;
}

function matches(rule: PathRule, path: readonly string[]): boolean {
  if (rule.exact ? path.length !== rule.segments.length : path.length < rule.segments.length) return false;
  for (let i = 0; i < rule.segments.length; i++) {
    if (rule.segments[i] !== path[i]) return false;
  }
  return true;
}

/** Whether `rule` can match a path below `prefix` (one longer than it at least). */
function mayMatchBelow(rule: PathRule, prefix: readonly string[]): boolean {
  if (rule.exact && rule.segments.length <= prefix.length) return false;
  const n = Math.min(rule.segments.length, prefix.length);
  for (let i = 0; i < n; i++) {
    if (rule.segments[i] !== prefix[i]) return false;
  }
  return true;
}

/**
 * Whether the scalar at `path` (property names; `[]` for an array element) is indexed under these rules: the
 * most specific matching rule wins, as on the service (more segments first; at equal length `/?` before `/*`;
 * at a full tie, excluded). No matching rule: not indexed.
 */
function isPathIndexed(rules: readonly PathRule[], path: readonly string[]): boolean {
  let best: PathRule | undefined;
  for (const r of rules) {
    if (!matches(r, path)) continue;
    if (
      !best ||
      r.segments.length > best.segments.length ||
      (r.segments.length === best.segments.length &&
        ((r.exact && !best.exact) || (r.exact === best.exact && !r.included)))
    )
      best = r;
  }
  return best?.included ?? false;
}

/**
 * Number of a document's leaf (scalar) properties that a write indexes under `policy`: none when the
 * indexingMode is "none"; else `id` and `_ts` (always indexed in consistent mode) plus every other leaf whose
 * most specific included/excluded path rule is an included one. Without a policy, every leaf.
 */
export function countIndexedPaths(policy: IndexPathPolicy | undefined, doc: unknown, limit = 10_000): number {
  if (policy === undefined) return countLeafPaths(doc, limit);
  if (policy.indexingMode === "none") return 0;
  const rules = rulesOf(policy);
  const included = rules.filter((r) => r.included);
  let count = 0;
  const stack: { value: unknown; path: string[] }[] = [{ value: doc, path: [] }];
  while (stack.length > 0 && count < limit) {
    const { value, path } = stack.pop() as { value: unknown; path: string[] };
    if (value !== null && typeof value === "object") {
      // A subtree no included rule can reach has no indexed leaf: it is not walked (a policy of a few included
      // paths under `/*` excluded skips most of a document).
      if (path.length > 0 && !included.some((r) => mayMatchBelow(r, path))) continue;
      if (Array.isArray(value))
        for (const child of value) stack.push({ value: child, path: [...path, "[]"] });
      else for (const [k, child] of Object.entries(value)) stack.push({ value: child, path: [...path, k] });
    } else if (path.length === 1 && ALWAYS_INDEXED.has(path[0])) {
      count++;
    } else if (isPathIndexed(rules, path)) {
      count++;
    }
  }
  return count;
}

/** RU of a point read of a document of `bytes` (at least RuModel.pointReadMinimum). */
export function pointReadCharge(bytes: number): number {
  return round2(Math.max(RuModel.pointReadMinimum, published(bytes, 1)));
}

/**
 * RU of a create, replace, upsert or delete of a document of `bytes` whose write indexes `indexedPaths` leaf paths
 * (see countIndexedPaths): at least RuModel.writeMinimum, plus RuModel.writePerIndexedPath per path.
 */
export function writeCharge(bytes: number, indexedPaths: number): number {
  return round2(
    Math.max(RuModel.writeMinimum, published(bytes, 2)) + indexedPaths * RuModel.writePerIndexedPath,
  );
}

/** RU of a patch: the write's charge plus RuModel.patchReadSurcharge. */
export function patchCharge(bytes: number, indexedPaths: number): number {
  return round2(writeCharge(bytes, indexedPaths) + RuModel.patchReadSurcharge);
}

/** RU of one query page that read (scanned) `documentsRead` documents and returned `bytesReturned` bytes. */
export function queryCharge(documentsRead: number, bytesReturned: number): number {
  const returnedKiB = bytesReturned === 0 ? 0 : Math.ceil(bytesReturned / KiB);
  return round2(
    RuModel.queryBase +
      documentsRead * RuModel.queryPerDocumentRead +
      returnedKiB * RuModel.queryPerKiBReturned,
  );
}

/** RU of one change feed page returning `documentsReturned` documents (RuModel.changeFeedEmpty when none: a 304). */
export function changeFeedCharge(documentsReturned: number): number {
  if (documentsReturned === 0) return RuModel.changeFeedEmpty;
  return round2(RuModel.changeFeedBase + documentsReturned * RuModel.changeFeedPerDocument);
}
