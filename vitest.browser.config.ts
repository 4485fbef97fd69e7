import { defineConfig } from "vitest/config";
import { BUILD_PACKAGES, SOURCE_NODE_OPTIONS, sourceResolution } from "./vitest.shared.js";

// `npm run test:browser`: tests that drive Debian's Chromium (/usr/bin/chromium) through playwright-core. Kept out
// of `npm test` (vitest.config.ts excludes test/browser) so that runs without a browser.
export default defineConfig({
  ...sourceResolution,
  test: {
    include: ["test/browser/**/*.test.ts"],
    // Only a hang may reach these (see vitest.config.ts); waits for the page use WAIT_MS.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: "forks",
    globalSetup: [BUILD_PACKAGES],
    // As vitest.config.ts: the CLI children run the working tree's TypeScript, never a stale packages/*/dist.
    env: { COSMOS_FEED_FROM_SOURCE: "1", NODE_OPTIONS: SOURCE_NODE_OPTIONS },
    maxWorkers: 1,
  },
});
