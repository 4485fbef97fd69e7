import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { buildAppFolder } from "../../bench/lib/app-child.js";
import type { FunctionMetadata } from "../../packages/devhost/src/index.js";
import { HostLogger, loadApp } from "../../packages/devhost/src/index.js";

// The contract test of contract.test.ts for this repository's own app (its own file: @azure/functions is a
// process-wide singleton, so one process loads one app): what the dev host captures for every function equals what
// @azure/functions hands the real worker, durable orchestrations and activities included.

const root = fileURLToPath(new URL("../..", import.meta.url));
const capture = fileURLToPath(new URL("./support/capture-registrations.cjs", import.meta.url));

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

const withoutSourceCondition = (options: string | undefined) =>
  (options ?? "").replace(/--conditions=source/g, "").trim();

describe("contract: this repository's app", () => {
  it("pins the durable protocol's package: durable-functions 3.5.0", () => {
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    expect(pkg.dependencies["durable-functions"]).toBe("3.5.0");
    expect(lock.packages["node_modules/durable-functions"].version).toBe("3.5.0");
  });

  it("matches for every function of the compiled app (npm run build's output)", async () => {
    const appDir = mkdtempSync(join(tmpdir(), "contract-app-"));
    try {
      await buildAppFolder(appDir);
      const app = await loadApp(appDir, {
        logger: new HostLogger({ sink: () => {} }),
        env: { ...process.env },
      });
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [capture, ...app.entryPoints.map((f) => join(appDir, f))],
        // Compiled JavaScript under plain node, as the Functions host loads it: the packages' dist/, not the tests'
        // "source" condition (vitest.shared.ts), which only tsx can load.
        {
          cwd: root,
          env: { ...process.env, NODE_OPTIONS: withoutSourceCondition(process.env.NODE_OPTIONS) },
        },
      );
      const expected = JSON.parse(stdout) as FunctionMetadata[];
      const captured = [...app.registry.functions.values()].map((f) => f.metadata);
      expect(comparable(JSON.parse(JSON.stringify(captured)))).toEqual(comparable(expected));
      const trigger = new Map(
        expected.map((m) => [
          m.name,
          Object.values(m.bindings).find((b) => b.type.endsWith("Trigger"))?.type,
        ]),
      );
      expect(trigger.get("reactToResources")).toBe("cosmosDBTrigger");
      expect(trigger.get("summarizeResources")).toBe("cosmosDBTrigger");
      expect(trigger.get("provisioning")).toBe("orchestrationTrigger");
      expect(trigger.get("deprovisioning")).toBe("orchestrationTrigger");
      expect(trigger.get("provisionResource")).toBe("activityTrigger");
      expect([...trigger.values()].filter((t) => t === "httpTrigger").length).toBeGreaterThanOrEqual(6);
    } finally {
      rmSync(appDir, { recursive: true, force: true });
    }
  });
});
