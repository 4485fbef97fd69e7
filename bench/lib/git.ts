import { execSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The repository root (the benches' results record its commit). */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** `git <args>` in the repository, or "" when git is not there. */
export function git(args: string): string {
  try {
    return execSync(`git ${args}`, {
      cwd: ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return "";
  }
}
