import { DevHostError } from "./errors.js";

/**
 * host.json `extensionBundle`, as the Functions host reads it: `id` and a NuGet version range (`[4.*, 5.0.0)`). The
 * host downloads the newest bundle the range admits; the dev host has no bundle, but the bundle's major version
 * decides which binding option names the host accepts — bundles 2.x and 3.x ship the Cosmos DB extension 3.x
 * (`connectionStringSetting`, `collectionName`, …), bundle 4.x ships extension 4.x (`connection`, `containerName`, …).
 */
export interface ExtensionBundle {
  /** The bundle's id, e.g. "Microsoft.Azure.Functions.ExtensionBundle". */
  id: string;
  /** The range as host.json writes it. */
  version: string;
  /** The major version of the newest bundle the range admits (2, 3 or 4; higher when the range starts above 4). */
  major: number;
}

/** The bundle majors published (Microsoft.Azure.Functions.ExtensionBundle 1.x to 4.x). */
const PUBLISHED_MAJORS = [1, 2, 3, 4] as const;
/** The Functions 4.x host refuses older bundles (https://aka.ms/func-min-bundle-versions). */
const MINIMUM_BUNDLE = "2.6.1";

interface Bound {
  version: [number, number, number];
  inclusive: boolean;
}

function invalid(range: string, why: string): DevHostError {
  return new DevHostError(
    `host.json extensionBundle.version '${range}' is not a valid version range (${why}); write e.g. "[4.*, 5.0.0)".`,
    { code: "InvalidExtensionBundle" },
  );
}

/** `4`, `4.2`, `4.2.1`, `4.*`, `4.2.*` → [major, minor, patch], a floating part counting as 0. */
function parseVersion(text: string, range: string): [number, number, number] {
  const parts = text.trim().split(".");
  if (parts.length === 0 || parts.length > 4 || parts[0] === "") throw invalid(range, `'${text}'`);
  const numbers = parts.map((p, i) => {
    if (p === "*" && i === parts.length - 1 && i > 0) return 0;
    if (!/^\d+$/.test(p)) throw invalid(range, `'${text}'`);
    return Number(p);
  });
  return [numbers[0], numbers[1] ?? 0, numbers[2] ?? 0];
}

function compare(a: [number, number, number], b: [number, number, number]): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** NuGet range syntax: `1.0` (≥ 1.0), `[1.0]` (exactly), `[1.0, 2.0)`, `(1.0, 2.0]`, `[1.0, )`, `(, 2.0)`. */
export function parseVersionRange(range: string): { min?: Bound; max?: Bound } {
  const text = range.trim();
  if (text === "") throw invalid(range, "empty");
  const open = text[0];
  if (open !== "[" && open !== "(") return { min: { version: parseVersion(text, range), inclusive: true } };
  const close = text[text.length - 1];
  if (close !== "]" && close !== ")") throw invalid(range, "no closing ']' or ')'");
  const inner = text.slice(1, -1).split(",");
  if (inner.length === 1) {
    if (open !== "[" || close !== "]") throw invalid(range, "an exact version is written [x.y.z]");
    const version = parseVersion(inner[0], range);
    return { min: { version, inclusive: true }, max: { version, inclusive: true } };
  }
  if (inner.length !== 2) throw invalid(range, "more than two bounds");
  const [low, high] = inner.map((s) => s.trim());
  const out: { min?: Bound; max?: Bound } = {};
  if (low !== "") out.min = { version: parseVersion(low, range), inclusive: open === "[" };
  if (high !== "") out.max = { version: parseVersion(high, range), inclusive: close === "]" };
  if (!out.min && !out.max) throw invalid(range, "no bound");
  return out;
}

/** Whether the range admits some version of major `m` (any x in [m.0.0, m+1.0.0)). */
function admitsMajor(r: { min?: Bound; max?: Bound }, m: number): boolean {
  const start: [number, number, number] = [m, 0, 0];
  const end: [number, number, number] = [m + 1, 0, 0];
  if (r.min && compare(r.min.version, end) >= 0) return false;
  if (r.max) {
    const c = compare(r.max.version, start);
    if (c < 0 || (c === 0 && !r.max.inclusive)) return false;
  }
  return true;
}

/**
 * Reads host.json's `extensionBundle` (undefined when absent). A range the host cannot parse, or one that admits
 * only bundle 1.x (the Functions 4.x host refuses it), is a DevHostError "InvalidExtensionBundle".
 */
export function readExtensionBundle(section: unknown): ExtensionBundle | undefined {
  if (section === undefined || section === null) return undefined;
  if (typeof section !== "object" || Array.isArray(section)) {
    throw new DevHostError("host.json extensionBundle must be an object with 'id' and 'version'.", {
      code: "InvalidExtensionBundle",
    });
  }
  const { id, version } = section as { id?: unknown; version?: unknown };
  if (typeof id !== "string" || id.trim() === "" || typeof version !== "string") {
    throw new DevHostError(
      `host.json extensionBundle needs a string 'id' and 'version', e.g. { "id": "Microsoft.Azure.Functions.ExtensionBundle", "version": "[4.*, 5.0.0)" }.`,
      { code: "InvalidExtensionBundle" },
    );
  }
  const range = parseVersionRange(version);
  if (range.min && range.max) {
    const c = compare(range.min.version, range.max.version);
    if (c > 0 || (c === 0 && !(range.min.inclusive && range.max.inclusive))) {
      throw invalid(version, "it admits no version");
    }
  }
  const published = [...PUBLISHED_MAJORS].reverse().find((m) => admitsMajor(range, m));
  // A range that starts past the published bundles: the host would look for that bundle; take its major.
  const major = published ?? range.min?.version[0];
  if (major === undefined) throw invalid(version, "it admits no published bundle");
  if (major < 2) {
    throw new DevHostError(
      `Referenced bundle ${id} of version ${version} does not meet the required minimum version of ${MINIMUM_BUNDLE}. Update your extension bundle reference in host.json to reference ${MINIMUM_BUNDLE} or later (e.g. "[4.*, 5.0.0)").`,
      { code: "InvalidExtensionBundle" },
    );
  }
  return { id, version, major };
}

/**
 * The Cosmos DB extension major the bundle brings: 3 for bundles 2.x and 3.x, 4 from bundle 4.x. Undefined without
 * a bundle (the dev host then reads each binding's names as it finds them; see cosmos/optionNames.ts).
 */
export function cosmosExtensionMajor(bundle: ExtensionBundle | undefined): 3 | 4 | undefined {
  if (!bundle) return undefined;
  return bundle.major < 4 ? 3 : 4;
}
