import { spawn } from "node:child_process";
import type { AppConfig } from "./appConfig.js";
import { DevHostError } from "./errors.js";
import { resolveEntryPoints } from "./loader.js";

/**
 * Makes sure `main` matches built files: when it matches nothing and the app has a `build` script, runs
 * `npm run build` in the app folder (output shown as it goes); with `build: false` it only says what to run.
 * Returns whether a build ran.
 */
export async function ensureBuilt(
  config: AppConfig,
  options: { build: boolean; log: (line: string) => void },
): Promise<boolean> {
  try {
    resolveEntryPoints(config);
    return false;
  } catch (e) {
    const missing = e instanceof DevHostError && e.code === "BuildOutputMissing";
    if (!missing || !options.build || !config.packageJson.scripts?.build) throw e;
  }
  options.log(
    `No file matches "main" (${config.packageJson.main}); running \`npm run build\` in ${config.appDir}.`,
  );
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn(npm, ["run", "build"], {
      cwd: config.appDir,
      stdio: ["ignore", "inherit", "inherit"],
    });
    child.once("error", reject);
    child.once("exit", (status) => resolve(status ?? 1));
  });
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
