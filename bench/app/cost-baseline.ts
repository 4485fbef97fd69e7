/**
 * `--cost --baseline <commit>`: the app as it was at another commit, measured in the same run as this checkout's,
 * so a cut is judged against its peer under the same machine load (the storm's figures move with it: how many feed
 * pages a flow's changes meet, hence summary recounts, depends on how long flows take). The baseline is the app's
 * own code at that commit (functions/, src/ and containers.json, built here with this checkout's TypeScript);
 * node_modules — the dev host, the durable engine and the packages — stay this checkout's, so the comparison is of
 * the app alone.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { type DatabaseDefinition, parseContainerDefinition } from "../../src/shared/containers.js";
import { ROOT } from "./setup.js";

/** The commit after `--baseline`, or undefined without the flag. */
export function baselineFromArgs(argv: readonly string[]): string | undefined {
  const i = argv.indexOf("--baseline");
  if (i < 0) return undefined;
  const commit = argv[i + 1];
  if (!commit || commit.startsWith("--")) throw new Error("--baseline needs a commit, e.g. --baseline main");
  return commit;
}

export interface BaselineApp {
  /** The short commit id the baseline was built from. */
  commit: string;
  /** A folder with its dist/, package.json, host.json and src/shared/containers.json (bench/app/setup.ts appFolder). */
  root: string;
  containers: DatabaseDefinition;
}

/** Extracts the app of `commit` into `scratch`/baseline-app (git archive) and builds it (tsc, as `npm run build`). */
export function buildBaseline(scratch: string, commit: string): BaselineApp {
  const sha = execFileSync("git", ["rev-parse", "--short", `${commit}^{commit}`], {
    cwd: ROOT,
    encoding: "utf8",
  }).trim();
  const root = join(scratch, "baseline-app");
  mkdirSync(root, { recursive: true });
  const files = [
    "functions",
    "src",
    "tsconfig.build.json",
    "tsconfig.base.json",
    "package.json",
    "host.json",
  ];
  const archive = execFileSync("git", ["archive", sha, ...files], { cwd: ROOT, maxBuffer: 1 << 28 });
  execFileSync("tar", ["-x", "-C", root], { input: archive });
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"), "dir");
  execFileSync(
    process.execPath,
    [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"],
    {
      cwd: root,
      stdio: "inherit",
    },
  );
  const containers = parseContainerDefinition(
    JSON.parse(readFileSync(join(root, "src", "shared", "containers.json"), "utf8")),
  );
  return { commit: sha, root, containers };
}
