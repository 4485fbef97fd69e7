// What the outside tests (test/packages) share: the folders globalSetup installed (test/packages/setup.ts), an
// environment with nothing of this repository's test set-up in it, and the child processes they run there.
import { inject } from "vitest";
import { type CliRun, runCli } from "../../support/start-cli.js";

export interface PackedTarball {
  name: string;
  file: string;
  packedBytes: number;
  unpackedBytes: number;
  entries: number;
}

export interface ScenarioInstall {
  dir: string;
  /** Every file of the project's node_modules. */
  installedBytes: number;
  /** The part of them in node_modules/@cosmos-feed. */
  ownBytes: number;
  packages: number;
}

export interface OutsideFixture {
  root: string;
  tarballs: Record<string, PackedTarball>;
  scenarios: Record<ScenarioName, ScenarioInstall>;
}

export type ScenarioName = "devhostApp" | "changefeedService" | "emulatorInTests" | "locksService";

declare module "vitest" {
  export interface ProvidedContext {
    outside: OutsideFixture;
  }
}

export const outside = (): OutsideFixture => inject("outside");

/**
 * The environment a user's shell would give: this process's, without what the repository's vitest configs and
 * CLI set for their own children (the "source" condition, COSMOS_FEED_FROM_SOURCE) and without vitest's own
 * variables (a project's vitest run from here must not think it runs inside another).
 */
export function outsideEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("VITEST") || k === "NODE_ENV" || k === "TEST" || k === "COSMOS_FEED_FROM_SOURCE")
      continue;
    if (k === "NODE_OPTIONS") {
      const kept = (v ?? "").split(/\s+/).filter((o) => o && o !== "--conditions=source");
      if (kept.length) env[k] = kept.join(" ");
      continue;
    }
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** `command args` in `cwd`, a process group of its own (so a signal reaches it as a terminal's Ctrl-C does). */
export function runOutside(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): CliRun {
  // runCli adds process.env under `env`: every key outsideEnv dropped is set to undefined, which spawn leaves out.
  const cleared = Object.fromEntries(Object.keys(process.env).map((k) => [k, undefined]));
  return runCli(args, { command, cwd, detached: true, env: { ...cleared, ...outsideEnv(env) } });
}

/** The first JSON line of a child's output, once it has been written. */
export async function jsonLine<T>(run: CliRun): Promise<T> {
  const [line] = await run.waitFor(/^\{.*\}$/m);
  return JSON.parse(line) as T;
}
