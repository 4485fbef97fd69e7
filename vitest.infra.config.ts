import { defineConfig } from "vitest/config";
import { BUILD_PACKAGES, SOURCE_NODE_OPTIONS, sourceResolution } from "./vitest.shared.js";

// `npm run test:infra`: infra/bicep compiled, linted and evaluated by the Bicep CLI itself, pinned and restored from
// NuGet through the .NET SDK (scripts/bicep.mjs). Kept out of `npm test` (vitest.config.ts excludes
// test/infra/compiler), which needs no .NET.
export default defineConfig({
  ...sourceResolution,
  test: {
    include: ["test/infra/compiler/**/*.test.ts"],
    // Only a hang may reach these (see vitest.config.ts).
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: "forks",
    globalSetup: [BUILD_PACKAGES],
    // As vitest.config.ts: the CLI children run the working tree's TypeScript, never a stale packages/*/dist.
    env: { COSMOS_FEED_FROM_SOURCE: "1", NODE_OPTIONS: SOURCE_NODE_OPTIONS },
    // Each file runs a few Bicep processes (mostly CPU: .NET start-up and compilation); two files at a time on 2 cores.
    maxWorkers: 2,
  },
});
