import { spawn } from "node:child_process";
import type { AppConfig } from "./appConfig.js";
import { DevHostError } from "./errors.js";
import { findStaleBuild, readBuildSources } from "./lifecycle/sources.js";
import { resolveEntryPoints } from "./loader.js";

/**
 * How to start npm: on Windows npm is `npm.cmd`, a batch file, which Node (since 20.12, CVE-2024-27980) spawns only
 * through the shell; elsewhere `npm` itself. The arguments given with it must need no quoting.
 */
export function npmCommand(platform: NodeJS.Platform = process.platform): {
  command: string;
  shell: boolean;
} {
  return platform === "win32" ? { command: "npm.cmd", shell: true } : { command: "npm", shell: false };
}

/** Runs `npm run build` in the app folder, its output shown as it goes; resolves with the exit code. */
export function runBuild(appDir: string): Promise<number> {
  const npm = npmCommand();
  return new Promise<number>((resolve, reject) => {
    const child = spawn(npm.command, ["run", "build"], {
      cwd: appDir,
      shell: npm.shell,
      stdio: ["ignore", "inherit", "inherit"],
    });
    child.once("error", reject);
    child.once("exit", (status) => resolve(status ?? 1));
  });
}

/**
 * Makes sure `main` matches an up-to-date build: when it matches nothing, or when a file the TypeScript build
 * compiles (the tsconfig's sources) is newer than the build output, and the app has a `build` script, runs
 * `npm run build` in the app folder (saying why). With `build: false` it only says what to run (nothing built) or
 * warns (stale build, served as it is). Returns whether a build ran.
 */
export async function ensureBuilt(
  config: AppConfig,
  options: { build: boolean; log: (line: string) => void; warn?: (line: string) => void },
): Promise<boolean> {
  let why: string | undefined;
  try {
    resolveEntryPoints(config);
  } catch (e) {
    const missing = e instanceof DevHostError && e.code === "BuildOutputMissing";
    if (!missing || !options.build || !config.packageJson.scripts?.build) throw e;
    why = `No file matches "main" (${config.packageJson.main})`;
  }
  if (why === undefined) {
    if (!config.packageJson.scripts?.build) return false;
    const sources = readBuildSources(config);
    const stale = sources && findStaleBuild(config, sources);
    if (!stale) return false;
    const newer = `${stale.source} (changed ${stale.sourceTime.toISOString()}) is newer than the build output (${stale.output}, written ${stale.outputTime.toISOString()})`;
    if (!options.build) {
      (options.warn ?? options.log)(`${newer}; serving the old build (--no-build).`);
      return false;
    }
    why = newer;
  }
  options.log(`${why}; running \`npm run build\` in ${config.appDir}.`);
  const code = await runBuild(config.appDir);
  if (code !== 0) {
    throw new DevHostError(
      `\`npm run build\` failed in ${config.appDir} (exit code ${code}); fix the build and retry.`,
      {
        code: "BuildFailed",
      },
    );
  }
  resolveEntryPoints(config); // still nothing → the same clear BuildOutputMissing message
  return true;
}
