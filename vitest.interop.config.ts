import { defineConfig } from "vitest/config";
import { BUILD_PACKAGES, SOURCE_NODE_OPTIONS, sourceResolution } from "./vitest.shared.js";

// `npm run test:interop`: Microsoft's .NET code as the judge — the .NET SDK's checks of the emulator and the .NET
// Change Feed Processor beside ours (test/interop), through the harness `npm run interop:build` builds
// (interop/dotnet). Kept out of `npm test` (vitest.config.ts excludes test/interop) so that runs without .NET.
export default defineConfig({
  ...sourceResolution,
  test: {
    include: ["test/interop/**/*.test.ts"],
    // Only a hang may reach these (see vitest.config.ts); waits for outcomes use WAIT_MS.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: "forks",
    globalSetup: [BUILD_PACKAGES],
    // As vitest.config.ts: the CLI children run the working tree's TypeScript, never a stale packages/*/dist.
    env: { COSMOS_FEED_FROM_SOURCE: "1", NODE_OPTIONS: SOURCE_NODE_OPTIONS },
    // Each file runs several .NET processes and an emulator: one file at a time on 2 cores.
    maxWorkers: 1,
  },
});
