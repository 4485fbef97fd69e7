import { defineConfig } from "vitest/config";

// `npm run test:browser`: tests that drive Debian's Chromium (/usr/bin/chromium) through playwright-core. Kept out
// of `npm test` (vitest.config.ts excludes test/browser) so that runs without a browser.
export default defineConfig({
  test: {
    include: ["test/browser/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 1,
  },
});
