import { defineConfig } from "vitest/config";

// `npm run test:packages`: the packages used from outside this repository, as their users get them (issue 33,
// docs/packages.md "Used from outside"). test/packages/setup.ts builds and `npm pack`s the packages, checks each
// tarball, and installs each scenario's project from the tarballs into a folder under os.tmpdir(); the tests run
// those projects as child processes. No "source" condition here (unlike vitest.shared.ts): nothing resolves to
// this repository's TypeScript, and the children get an environment without the repository's test settings
// (test/packages/support/outside.ts). Kept out of `npm test` (vitest.config.ts excludes test/packages).
export default defineConfig({
  test: {
    include: ["test/packages/**/*.test.ts"],
    // Only a hang may reach these (see vitest.config.ts); waits for outcomes use WAIT_MS.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: "forks",
    globalSetup: ["test/packages/setup.ts"],
    // Each file runs a dev host, processors or an emulator in child processes: one file at a time on 2 cores.
    maxWorkers: 1,
  },
});
