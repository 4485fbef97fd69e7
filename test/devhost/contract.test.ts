import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import type { FunctionMetadata } from "../../packages/devhost/src/index.js";
import { HostLogger, loadApp } from "../../packages/devhost/src/index.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const capture = fileURLToPath(new URL("./support/capture-registrations.cjs", import.meta.url));

/** Binding names carry random hex suffixes per process: compare each binding's key against its own name and
 * the bindings in order without it. Everything else — routes, methods, every option, retryOptions — verbatim. */
function comparable(metadata: FunctionMetadata[]) {
  return metadata.map(({ name, bindings, retryOptions }) => ({
    name,
    retryOptions,
    bindings: Object.entries(bindings).map(([key, { name: bindingName, ...rest }]) => ({
      keyIsName: key === bindingName || (key === "$return" && bindingName === undefined),
      ...rest,
    })),
  }));
}

async function libraryRegistrations(files: string[]): Promise<FunctionMetadata[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [capture, ...files], { cwd: root });
  return JSON.parse(stdout) as FunctionMetadata[];
}

describe("contract: the dev host captures exactly what @azure/functions hands the worker", () => {
  it("is pinned to the lockfile's @azure/functions", () => {
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    const installed = createRequire(import.meta.url)("@azure/functions/package.json").version;
    expect(pkg.dependencies["@azure/functions"]).toBe("4.16.5");
    expect(lock.packages["node_modules/@azure/functions"].version).toBe("4.16.5");
    expect(installed).toBe("4.16.5");
  });

  for (const fixture of ["app-esm", "app-cjs"]) {
    it(`matches for every function of test/fixtures/${fixture}`, async () => {
      const appDir = join(root, "test/fixtures", fixture);
      const app = await loadApp(appDir, { logger: new HostLogger({ sink: () => {} }) });
      const expected = await libraryRegistrations(app.entryPoints.map((f) => join(appDir, f)));
      const captured = [...app.registry.functions.values()].map((f) => f.metadata);
      expect(expected.length).toBeGreaterThanOrEqual(5);
      expect(comparable(JSON.parse(JSON.stringify(captured)))).toEqual(comparable(expected));
      if (fixture === "app-cjs") {
        const onThing = expected.find((m) => m.name === "onThing");
        expect(onThing?.retryOptions).toMatchObject({
          retryStrategy: "exponentialBackoff",
          maxRetryCount: 3,
        });
        expect(Object.values(onThing?.bindings ?? {})[0]).toMatchObject({
          type: "cosmosDBTrigger",
          leaseContainerPrefix: "fixture-",
          feedPollDelay: 200,
        });
      }
    });
  }
});
