// vitest's globalSetup (vitest.shared.ts): builds the workspace packages' dist/ once before the tests
// (scripts/build-packages.mjs: incremental, a few seconds when nothing changed). The tests run the sources, but the
// app code a dev host's worker loads resolves the packages as the deployed app does, to dist/
// (packages/devhost/src/worker/spawn-worker.ts workerEnv): it must be the working tree's.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export default function setup(): void {
  const script = fileURLToPath(new URL("../../scripts/build-packages.mjs", import.meta.url));
  execFileSync(process.execPath, [script], { stdio: ["ignore", "ignore", "inherit"] });
}
