import { defineConfig } from "vitest/config";

// `npm run test:browser`: tests that drive Debian's Chromium (/usr/bin/chromium) through playwright-core. Kept out
// of `npm test` (vitest.config.ts excludes test/browser) so that runs without a browser.
export default defineConfig({
  test: {
    include: ["test/browser/**/*.test.ts"],
    // Only a hang may reach these (see vitest.config.ts); waits for the page use WAIT_MS.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: "forks",
    maxWorkers: 1,
  },
});
