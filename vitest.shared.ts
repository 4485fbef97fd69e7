// What every vitest config here shares: the workspace packages resolve to their TypeScript sources (the "source"
// condition of each package's `exports`, docs/packages.md), in the test files and in the child processes they start,
// so that a test's relative import of a package's internals and a package's import of its sibling by name load ONE
// copy of each module (one CosmosFeedError class: instanceof holds). test/tools/source-condition.test.ts checks both.

/**
 * vitest's own default for node-side resolution (vite's `defaultServerConditions` without "module": a package's
 * "module" build is often not Node-loadable ESM), "source" first. vitest also starts its test workers with these
 * as `--conditions` flags.
 */
export const SOURCE_CONDITIONS = ["source", "node", "development|production"];

/** For `defineConfig`: vite's resolution (test files are run by vite's SSR environment) with the "source" condition. */
export const sourceResolution = {
  resolve: { conditions: SOURCE_CONDITIONS },
  ssr: { resolve: { conditions: SOURCE_CONDITIONS } },
};

/** For `test.env`: child processes (tsx workers, the CLI from source) resolve the packages the same way. */
export const SOURCE_NODE_OPTIONS = [process.env.NODE_OPTIONS, "--conditions=source"]
  .filter(Boolean)
  .join(" ");

/** For `test.globalSetup`: the packages' dist/ built from the working tree first (test/support/build-packages.ts). */
export const BUILD_PACKAGES = "test/support/build-packages.ts";
