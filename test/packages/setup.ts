// globalSetup of `npm run test:packages` (vitest.packages.config.ts): the packages as their users get them.
// 1. Builds the packages (scripts/build-packages.mjs) and `npm pack`s each into a folder under os.tmpdir() — never
//    inside the repository, so nothing of ours (node_modules, workspaces) can be resolved from the installs.
// 2. Checks each tarball: only dist/, package.json, README.md, CHANGELOG.md, LICENSE (and the files `bin` names);
//    no tests, fixtures or build state; README and LICENSE present; the PACKED package.json (read from the tarball)
//    with no "source" export condition and no path into src/ (the packages' prepack strips the conditions the
//    repository resolves: scripts/release-manifest.mjs); every source map's sources either shipped or
//    embedded (`sourcesContent`) — the packages ship no maps (`files`: "!dist/**/*.map"): without src/ they
//    point at nothing, and dropping them halves the unpacked size (docs/packages.md, "Used from outside").
// 3. Installs each scenario's project once — a copy of test/packages/fixtures/<project> plus the tarballs it needs —
//    with `npm install <tarballs> --no-audit --no-fund` (the registry for everything else), and measures it.
// 4. Prints the sizes and writes them to <temp folder>/sizes.json, which teardown keeps (the installs it removes).
import { execFileSync, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import type { OutsideFixture, PackedTarball, ScenarioInstall, ScenarioName } from "./support/outside.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const fixtures = join(repoRoot, "test", "packages", "fixtures");
const PACKAGES = ["core", "changefeed", "locks", "emulator", "devhost"] as const;
type PackageName = (typeof PACKAGES)[number];

/** Which project each scenario installs, and which tarballs (a tarball's siblings are not on the registry). */
const SCENARIOS: Record<
  ScenarioName,
  { project: string; tarballs: PackageName[]; dev?: boolean; uses?: ScenarioName }
> = {
  devhostApp: {
    project: "v4-app",
    tarballs: ["devhost", "emulator", "changefeed", "locks", "core"],
    dev: true,
  },
  changefeedService: { project: "service", tarballs: ["changefeed", "emulator", "core"] },
  emulatorInTests: { project: "consumer", tarballs: ["emulator", "core"] },
  // Its Cosmos DB is the emulator of the change feed service's install (its own has none).
  locksService: { project: "locks-service", tarballs: ["locks", "core"], uses: "changefeedService" },
};

/** The app's local.settings.json (git ignores the name, so the fixture cannot hold it): no Cosmos DB connection. */
const APP_SETTINGS = { IsEncrypted: false, Values: { FUNCTIONS_WORKER_RUNTIME: "node" } };

interface PackFile {
  path: string;
  size: number;
}
interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: PackFile[];
}

/** A package manifest as the tarball check reads it (the packed package.json). */
export interface PackedManifest {
  bin?: string | Record<string, string>;
  exports?: unknown;
  main?: unknown;
  module?: unknown;
  types?: unknown;
  typings?: unknown;
}

/**
 * What is wrong with a packed package.json: a "source" condition anywhere in `exports` (the repository's own, whose
 * files do not ship), or an entry point (`exports`, `main`, `module`, `types`, `typings`, `bin`) into src/.
 */
export function manifestProblems(manifest: PackedManifest): string[] {
  const problems: string[] = [];
  const walk = (value: unknown, where: string) => {
    if (typeof value === "string") {
      if (/^src(\/|$)/.test(posix.normalize(value)))
        problems.push(`package.json: ${where} points into src/ (${value}), which is not shipped`);
    } else if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) walk(v, `${where}[${i}]`);
    } else if (value !== null && typeof value === "object") {
      for (const [key, v] of Object.entries(value)) {
        if (key === "source") problems.push(`package.json: ${where} has a "source" condition`);
        walk(v, `${where}[${JSON.stringify(key)}]`);
      }
    }
  };
  for (const field of ["exports", "main", "module", "types", "typings", "bin"] as const)
    walk(manifest[field], field);
  return problems;
}

/** What is wrong with a tarball: its packed package.json and its file list (empty when nothing is). */
export function tarballProblems(
  manifest: PackedManifest,
  files: string[],
  readFile: (path: string) => string,
): string[] {
  const problems: string[] = manifestProblems(manifest);
  const bins = new Set(
    Object.values(typeof manifest.bin === "string" ? { bin: manifest.bin } : (manifest.bin ?? {})).map((p) =>
      posix.normalize(p),
    ),
  );
  const top = new Set(["package.json", "README.md", "CHANGELOG.md", "LICENSE"]);
  const listed = new Set(files);
  for (const f of files) {
    if (!top.has(f) && !f.startsWith("dist/") && !bins.has(f))
      problems.push(`${f}: not dist/, a bin or a doc`);
    if (/(^|\/)(test|tests|__tests__|fixtures?)(\/|$)|\.(test|spec)\.[cm]?[jt]s$/.test(f))
      problems.push(`${f}: a test or fixture`);
    if (/\.tsbuildinfo$|(^|\/)\.|\.tgz$|\.log$/.test(f)) problems.push(`${f}: build state or a stray file`);
    if (f.endsWith(".map")) {
      const map = JSON.parse(readFile(f)) as { sources?: string[]; sourcesContent?: (string | null)[] };
      (map.sources ?? []).forEach((s, i) => {
        const target = posix.normalize(posix.join(posix.dirname(f), s));
        if (!listed.has(target) && typeof map.sourcesContent?.[i] !== "string")
          problems.push(`${f}: maps ${target}, which is not shipped, and has no sourcesContent for it`);
      });
    }
  }
  for (const f of ["README.md", "LICENSE", "package.json"])
    if (!listed.has(f)) problems.push(`${f} is missing`);
  return problems;
}

/**
 * Bytes of every file in `dir`'s node_modules (symlinks not followed), the part of them that is ours
 * (node_modules/@cosmos-feed), and the packages installed.
 */
function measure(dir: string): { bytes: number; ownBytes: number; packages: number } {
  const modules = join(dir, "node_modules");
  const own = join(modules, "@cosmos-feed");
  let bytes = 0;
  let ownBytes = 0;
  let packages = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        if (existsSync(join(p, "package.json")) && /node_modules(\/@[^/]+)?$/.test(d)) packages++;
        walk(p);
      } else if (e.isFile()) {
        const size = statSync(p).size;
        bytes += size;
        if (p.startsWith(own)) ownBytes += size;
      }
    }
  };
  walk(modules);
  return { bytes, ownBytes, packages };
}

/**
 * Removes a folder, without blocking the event loop (vitest's main process ends its test workers meanwhile; a
 * synchronous removal of the installs made that time out): `rm -rf` where there is one (much faster than Node's
 * recursive rm on a node_modules), else fs.promises.rm.
 */
async function remove(path: string): Promise<void> {
  if (process.platform === "win32") await rm(path, { recursive: true, force: true });
  else await run("rm", ["-rf", path], tmpdir(), process.env);
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const collect = (c: Buffer) => {
      out += c.toString();
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${command} ${args.join(" ")} in ${cwd}: exit ${code}\n${out}`)),
    );
  });
}

/**
 * better-sqlite3 (the emulator's SQLite) compiles from source when its prebuilt binary cannot be downloaded,
 * minutes on a busy 2-core machine. prebuild-install, its installer, takes a prebuilt binary from a local folder
 * (`npm_config_better_sqlite3_local_prebuilds`): made here from the repository's own build of the same version
 * for this Node.js. Another version (a newer release the registry gives) is installed as users get it.
 */
function localPrebuilds(root: string): NodeJS.ProcessEnv {
  const pkgDir = join(repoRoot, "node_modules", "better-sqlite3");
  const binary = join(pkgDir, "build", "Release", "better_sqlite3.node");
  if (!existsSync(binary)) return {};
  const { version } = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { version: string };
  const dir = join(root, "prebuilds");
  mkdirSync(dir, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync("tar", ["-czf", join(dir, name), "-C", pkgDir, "build/Release/better_sqlite3.node"]);
  return { npm_config_better_sqlite3_local_prebuilds: dir };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  execFileSync(process.execPath, [join(repoRoot, "scripts", "build-packages.mjs")], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const root = mkdtempSync(join(tmpdir(), "cosmos-feed-packages-"));
  try {
    project.provide("outside", await prepare(root));
  } catch (e) {
    // What the run left: the output says what failed; the folder (hundreds of MB of installs) goes.
    await remove(root);
    throw e;
  }
  return async () => {
    if (process.env.KEEP_OUTSIDE === "1") return;
    await Promise.all(
      readdirSync(root)
        .filter((e) => e !== "sizes.json")
        .map((e) => remove(join(root, e))),
    );
  };
}

/** Packs, checks and installs (the numbered steps above) in `root`; what the tests get through inject(). */
async function prepare(root: string): Promise<OutsideFixture> {
  const tarballDir = join(root, "tarballs");
  mkdirSync(tarballDir);

  const tarballs = {} as Record<PackageName, PackedTarball>;
  const problems: string[] = [];
  for (const name of PACKAGES) {
    const pkgDir = join(repoRoot, "packages", name);
    const [packed] = JSON.parse(
      execFileSync("npm", ["pack", "--json", "--pack-destination", tarballDir], {
        cwd: pkgDir,
        encoding: "utf8",
      }),
    ) as PackResult[];
    const file = join(tarballDir, packed.filename);
    // A file's contents as packed (the manifest and the maps are read from the tarball, not from the working tree).
    const readFile = (path: string) =>
      execFileSync("tar", ["-xzOf", file, `package/${path}`], { encoding: "utf8" });
    const manifest = JSON.parse(readFile("package.json")) as PackedManifest & { name: string };
    for (const p of tarballProblems(
      manifest,
      packed.files.map((f) => f.path),
      readFile,
    ))
      problems.push(`${manifest.name}: ${p}`);
    tarballs[name] = {
      name: manifest.name,
      file,
      packedBytes: packed.size,
      unpackedBytes: packed.unpackedSize,
      entries: packed.entryCount,
    };
  }
  if (problems.length) throw new Error(`The tarballs ship what they must not:\n${problems.join("\n")}`);

  const env: NodeJS.ProcessEnv = { ...process.env, ...localPrebuilds(root) };
  delete env.NODE_OPTIONS;
  delete env.COSMOS_FEED_FROM_SOURCE;
  const scenarios = {} as Record<ScenarioName, ScenarioInstall>;
  const install = async (scenario: ScenarioName) => {
    const { project: name, tarballs: needed, dev } = SCENARIOS[scenario];
    const dir = join(root, name);
    cpSync(join(fixtures, name), dir, { recursive: true });
    if (scenario === "devhostApp")
      writeFileSync(join(dir, "local.settings.json"), JSON.stringify(APP_SETTINGS));
    const files = needed.map((n) => tarballs[n].file);
    await run(
      "npm",
      ["install", ...(dev ? ["--save-dev"] : []), ...files, "--no-audit", "--no-fund"],
      dir,
      env,
    );
    const { bytes, ownBytes, packages } = measure(dir);
    scenarios[scenario] = { dir, installedBytes: bytes, ownBytes, packages };
  };
  // Two at a time: npm waits on the cache and the network more than on the CPU.
  // OUTSIDE_ONLY=<scenario>,… installs only those (to run one test file while working on it).
  const only = process.env.OUTSIDE_ONLY?.split(",").filter(Boolean);
  const wanted = new Set(only?.flatMap((n) => [n, SCENARIOS[n as ScenarioName]?.uses ?? n]));
  const names = (Object.keys(SCENARIOS) as ScenarioName[]).filter((n) => !only || wanted.has(n));
  await Promise.all([
    (async () => {
      for (const n of names.slice(0, 2)) await install(n);
    })(),
    (async () => {
      for (const n of names.slice(2)) await install(n);
    })(),
  ]);

  const fixture: OutsideFixture = { root, tarballs, scenarios };
  const sizesFile = join(root, "sizes.json");
  writeFileSync(sizesFile, `${JSON.stringify({ node: process.version, tarballs, scenarios }, null, 2)}\n`);
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  const lines = [
    "tarball                    packed    unpacked  files",
    ...PACKAGES.map((n) => {
      const t = tarballs[n];
      return `${t.name.padEnd(26)} ${kib(t.packedBytes).padStart(8)} ${kib(t.unpackedBytes).padStart(10)} ${String(t.entries).padStart(6)}`;
    }),
    "scenario            node_modules  @cosmos-feed  packages",
    ...names.map(
      (n) =>
        `${n.padEnd(18)} ${kib(scenarios[n].installedBytes).padStart(13)} ${kib(scenarios[n].ownBytes).padStart(13)} ${String(scenarios[n].packages).padStart(9)}`,
    ),
    `(${sizesFile})`,
  ];
  console.log(lines.join("\n"));
  return fixture;
}
