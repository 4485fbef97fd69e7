/**
 * npm's version ranges, as far as `engines.node` fields use them: `||` alternatives of space-separated comparators
 * (`>=20`, `>= 0.4`, `^20.19.0`, `~1.2`, `<9.0.0`, `20.x`, `*`). A form outside that throws, so a test never passes
 * on a range it did not understand. Prerelease tags are ignored (engines name releases).
 */
type Version = [number, number, number];

const cmp = (a: Version, b: Version): number => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** A comparator as [lower bound (inclusive), upper bound (exclusive)] with undefined for "none". */
type Interval = { lo?: Version; loOpen?: boolean; hi?: Version; hiClosed?: boolean };

function parseComparator(token: string, range: string): Interval {
  if (token === "*" || token === "x" || token === "") return {};
  const m = /^(>=|<=|>|<|=|\^|~)?v?(\d+|x|\*)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?(?:-[0-9A-Za-z.-]+)?$/.exec(
    token,
  );
  if (!m) throw new Error(`unsupported version range '${range}' (comparator '${token}')`);
  const op = m[1] ?? "=";
  const given = [m[2], m[3], m[4]].filter((p) => p !== undefined && p !== "x" && p !== "*").map(Number);
  if (given.length === 0) return {};
  const v: Version = [given[0], given[1] ?? 0, given[2] ?? 0];
  const full = given.length === 3;
  /** The next version after the given parts (1.2 → 1.3.0, 1 → 2.0.0). */
  const bump = (): Version =>
    given.length === 1 ? [v[0] + 1, 0, 0] : given.length === 2 ? [v[0], v[1] + 1, 0] : [v[0], v[1], v[2] + 1];
  switch (op) {
    case ">=":
      return { lo: v };
    case ">":
      return full ? { lo: v, loOpen: true } : { lo: bump() };
    case "<":
      return { hi: v };
    case "<=":
      return full ? { hi: v, hiClosed: true } : { hi: bump() };
    case "~":
      return { lo: v, hi: given.length === 1 ? [v[0] + 1, 0, 0] : [v[0], v[1] + 1, 0] };
    case "^": {
      if (v[0] > 0 || given.length === 1) return { lo: v, hi: [v[0] + 1, 0, 0] };
      if (v[1] > 0 || given.length === 2) return { lo: v, hi: [0, v[1] + 1, 0] };
      return { lo: v, hi: [0, 0, v[2] + 1] };
    }
    default:
      return full ? { lo: v, hi: v, hiClosed: true } : { lo: v, hi: bump() };
  }
}

function within(version: Version, i: Interval): boolean {
  if (i.lo && (i.loOpen ? cmp(version, i.lo) <= 0 : cmp(version, i.lo) < 0)) return false;
  if (i.hi && (i.hiClosed ? cmp(version, i.hi) > 0 : cmp(version, i.hi) >= 0)) return false;
  return true;
}

/** The comparator sets of a range (`||` alternatives), each a list of intervals that must all hold. */
function sets(range: string): Interval[][] {
  return range.split("||").map((alt) => {
    const tokens = alt
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, "$1")
      .split(/\s+/);
    if (tokens.includes("-")) throw new Error(`unsupported version range '${range}' (hyphen range)`);
    return tokens.map((t) => parseComparator(t, range));
  });
}

export function parseVersion(text: string): Version {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(text.trim());
  if (!m) throw new Error(`not a version: '${text}'`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

export function satisfies(version: string, range: string): boolean {
  const v = parseVersion(version);
  return sets(range).some((set) => set.every((i) => within(v, i)));
}

/** The lowest version each `||` alternative admits (its lower bounds' maximum; 0.0.0 when unbounded below). */
export function lowestVersions(range: string): string[] {
  return sets(range).map((set) => {
    let low: Version = [0, 0, 0];
    for (const i of set)
      if (i.lo && cmp(i.lo, low) > 0) low = i.loOpen ? [i.lo[0], i.lo[1], i.lo[2] + 1] : i.lo;
    return low.join(".");
  });
}
