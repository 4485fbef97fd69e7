/**
 * The Node.js versions the project claims are the ones its dependencies accept: every package of package-lock.json
 * (production and dev, as `npm ci` installs them) admits the lowest version of each alternative of package.json's
 * `engines.node`, so `npm ci` on any claimed version warns of no engine (EBADENGINE); the README states that range.
 * A dependency bump that needs a newer Node (as @azure/identity 4.13.2+ needs Node 22) fails here.
 */
import { describe, expect, it } from "vitest";
import { readDoc } from "../support/markdown.js";
import { lowestVersions, satisfies } from "../support/node-range.js";

interface Locked {
  version?: string;
  engines?: { node?: string } | string[];
  cpu?: string[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}
const pkg = JSON.parse(readDoc("package.json")) as { engines: { node: string } };
const lock = JSON.parse(readDoc("package-lock.json")) as { packages: Record<string, Locked> };

/** The architectures Node.js runs on (process.arch); a package for none of them (wasm32) is never installed. */
const NODE_ARCHES = [
  "arm",
  "arm64",
  "ia32",
  "loong64",
  "mips",
  "mipsel",
  "ppc",
  "ppc64",
  "riscv64",
  "s390",
  "s390x",
  "x64",
];

/**
 * The lock paths `npm ci` can install on some Node platform: reachable from the root through dependencies (Node's
 * resolution: the nearest node_modules up the tree), never through a package whose `cpu` excludes every Node arch.
 */
function installable(): Set<string> {
  const seen = new Set<string>();
  const resolve = (from: string, name: string): string | undefined => {
    for (let dir = from; ; dir = dir.replace(/\/?node_modules\/(@[^/]+\/)?[^/]+$/, "")) {
      const path = `${dir ? `${dir}/` : ""}node_modules/${name}`;
      if (lock.packages[path]) return path;
      if (dir === "") return undefined;
    }
  };
  const visit = (path: string) => {
    const p = lock.packages[path];
    if (seen.has(path) || !p) return;
    if (p.cpu && !p.cpu.some((c) => NODE_ARCHES.includes(c))) return;
    seen.add(path);
    for (const deps of [p.dependencies, p.optionalDependencies, p.peerDependencies]) {
      for (const name of Object.keys(deps ?? {})) {
        const to = resolve(path, name);
        if (to) visit(to);
      }
    }
  };
  const root = lock.packages[""] as Locked & { devDependencies?: Record<string, string> };
  for (const name of Object.keys({
    ...root.dependencies,
    ...root.devDependencies,
    ...root.optionalDependencies,
  })) {
    const to = resolve("", name);
    if (to) visit(to);
  }
  return seen;
}

describe("the range reader", () => {
  it("reads the forms the lockfile's engines use", () => {
    expect(satisfies("20.19.0", "^20.19.0 || >=22.12.0")).toBe(true);
    expect(satisfies("20.18.3", "^20.19.0 || >=22.12.0")).toBe(false);
    expect(satisfies("22.11.0", "^20.19.0 || >=22.12.0")).toBe(false);
    expect(satisfies("22.12.0", "^20.19.0 || >=22.12.0")).toBe(true);
    expect(satisfies("20.19.0", ">=22.0.0")).toBe(false);
    expect(satisfies("20.19.0", ">= 0.4")).toBe(true);
    expect(satisfies("20.19.0", "^18.19.0 || >=20.6.0")).toBe(true);
    expect(satisfies("20.19.0", ">=9.3.0 || >=8.10.0 <9.0.0")).toBe(true);
    expect(satisfies("8.9.0", ">=9.3.0 || >=8.10.0 <9.0.0")).toBe(false);
    expect(satisfies("20.19.0", "<=0.11.8 || >0.11.10")).toBe(true);
    expect(satisfies("20.19.0", "^10 || ^12 || ^13.7 || ^14 || >=15.0.1")).toBe(true);
    expect(satisfies("13.6.0", "^10 || ^12 || ^13.7 || ^14 || >=15.0.1")).toBe(false);
    expect(satisfies("20.19.0", "*")).toBe(true);
    expect(() => satisfies("20.19.0", "1.0.0 - 2.0.0")).toThrow(/unsupported/);
    expect(lowestVersions("^20.19.0 || >=22.12.0")).toEqual(["20.19.0", "22.12.0"]);
  });
});

describe("package.json engines", () => {
  const claimed = lowestVersions(pkg.engines.node);

  it("every locked package admits the lowest version of each claimed range", () => {
    const refused: string[] = [];
    let checked = 0;
    const paths = installable();
    expect(paths.size).toBeGreaterThan(500);
    for (const path of paths) {
      const p = lock.packages[path];
      const range = Array.isArray(p.engines) ? undefined : p.engines?.node;
      if (range === undefined) continue;
      checked++;
      for (const v of claimed) {
        if (!satisfies(v, range))
          refused.push(`${path.replace(/^.*node_modules\//, "")}@${p.version}: ${range} refuses ${v}`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(refused).toEqual([]);
  });

  it("the lockfile's root and the README state the same range", () => {
    expect((lock.packages[""].engines as { node: string }).node).toBe(pkg.engines.node);
    const requirements = readDoc("README.md").split("## Requirements")[1] ?? "";
    expect(requirements).toContain(`\`${pkg.engines.node}\``);
  });
});
