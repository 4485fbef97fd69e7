/** Runs a docs example's fixture as a plain script in a real child process, as a user would outside vitest. */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { WAIT_MS } from "../../bench/lib/until.js";

/** How long a test running {@link runExampleScript} waits for it (the child's own bound is below this). */
export const EXAMPLE_TEST_TIMEOUT_MS = WAIT_MS * 5;

/**
 * `node --import tsx <script>` with the packages' TypeScript sources (the "source" condition), bounded by
 * 4 × WAIT_MS; the last line it prints, parsed as JSON.
 */
export async function runExampleScript(script: string): Promise<unknown> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], {
    timeout: WAIT_MS * 4,
    env: { ...process.env, NODE_OPTIONS: "--conditions=source" },
  });
  return JSON.parse(stdout.trim().split("\n").pop() ?? "");
}
