import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The browser tests need Chromium: `npm run test:browser` (vitest.browser.config.ts) runs them.
    exclude: [...configDefaults.exclude, "test/browser/**"],
    // Integration tests start real servers on real sockets; give them room on a 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Most test time is waiting on sockets, timers and child processes, not CPU: on a 2-core machine vitest's
    // default (cores − 1 = one file at a time) leaves the CPU two-thirds idle. Three files at a time keep the whole
    // suite within a few minutes there.
    maxWorkers: 3,
  },
});
