import { configDefaults, defineConfig } from "vitest/config";
import { BUILD_PACKAGES, SOURCE_NODE_OPTIONS, sourceResolution } from "./vitest.shared.js";

export default defineConfig({
  ...sourceResolution,
  test: {
    include: ["test/**/*.test.ts"],
    // The browser tests need Chromium: `npm run test:browser` (vitest.browser.config.ts) runs them. The Bicep
    // compiler's tests and the interop tests need the .NET SDK: `npm run test:infra` (vitest.infra.config.ts) and
    // `npm run test:interop` (vitest.interop.config.ts) run them. The tests on packed tarballs installed outside the
    // repository: `npm run test:packages` (vitest.packages.config.ts).
    exclude: [
      ...configDefaults.exclude,
      "test/browser/**",
      "test/infra/compiler/**",
      "test/interop/**",
      "test/packages/**",
    ],
    // Integration tests start real servers, child processes and builds on real sockets. A timeout here only ends
    // a test that hangs: it must be far above what the slowest test needs on a loaded 2-core machine, so that CI
    // is never red by chance. With two `npm test` runs side by side (and other work) on 2 cores, the packaging
    // test's setup (build, npm ci, unzip, load) took more than 120 s and the change feed chaos test 120 s.
    // No test sets its own, except the change feed chaos test (its work is fixed and its waits are bounded by
    // progress: test/chaos/changefeed-chaos.test.ts says why).
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: "forks",
    globalSetup: [BUILD_PACKAGES],
    // Most test time is waiting on sockets, timers and child processes, not CPU: on a 2-core machine vitest's
    // default (cores − 1 = one file at a time) leaves the CPU two-thirds idle. Three files at a time keep the whole
    // suite within a few minutes there.
    maxWorkers: 3,
    // The CLI children the tests start (`node packages/devhost/bin/cosmos-feed.js …`, `npm start`) run the working
    // tree's TypeScript (and NODE_OPTIONS gives them the "source" condition: vitest.shared.ts), never a
    // packages/*/dist compiled before an edit (test/tools/compiled-cli.test.ts tests that choice itself).
    // No test judges how long an app takes to load, except test/devhost/worker-load.test.ts, which sets its own bound:
    // on a busy machine the suite's dev hosts get ten minutes to load their apps, not the 60 s default.
    env: {
      COSMOS_FEED_FROM_SOURCE: "1",
      NODE_OPTIONS: SOURCE_NODE_OPTIONS,
      DEVHOST_WORKER_LOAD_TIMEOUT_MS: "600000",
    },
  },
});
