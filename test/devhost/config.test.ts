import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  applySettings,
  readAppConfig,
  resolveSettingExpressions,
} from "../../packages/devhost/src/appConfig.js";
import { DevHostError } from "../../packages/devhost/src/errors.js";
import { cosmosExtensionMajor } from "../../packages/devhost/src/extensionBundle.js";
import { expandBraces, globFiles } from "../../packages/devhost/src/glob.js";
import { isESModule } from "../../packages/devhost/src/loader.js";
import { HostLogger } from "../../packages/devhost/src/logger.js";

function app(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "devhost-config-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

describe("app folder configuration", () => {
  it("reads host.json and local.settings.json as the host and Core Tools do", () => {
    const dir = app({
      "package.json": JSON.stringify({ main: "dist/*.js", type: "module", scripts: { build: "tsc" } }),
      "host.json": JSON.stringify({
        version: "2.0",
        logging: { logLevel: { default: "Warning" } },
        extensions: { http: { routePrefix: "/v2/" }, durableTask: { hubName: "%HUB%" } },
      }),
      "local.settings.json": JSON.stringify({ Values: { A: "1", N: 5 }, Host: { LocalHttpPort: 7199 } }),
    });
    const config = readAppConfig(dir);
    expect(config.routePrefix).toBe("v2");
    expect(config.durableHubName).toBe("%HUB%");
    expect(config.logLevel).toBe("warning");
    expect(config.settings).toEqual({ A: "1", N: "5" });
    expect(config.localHttpPort).toBe(7199);
    expect(config.packageJson.main).toBe("dist/*.js");
  });

  it("defaults the route prefix to api and keeps an explicit empty prefix", () => {
    expect(readAppConfig(app({ "package.json": "{}" })).routePrefix).toBe("api");
    const empty = app({ "package.json": "{}", "host.json": '{"extensions":{"http":{"routePrefix":""}}}' });
    expect(readAppConfig(empty).routePrefix).toBe("");
  });

  it("reads the durable concurrency limits of host.json and ignores ones that are not positive whole numbers", () => {
    const limits = (durableTask: object) =>
      readAppConfig(
        app({ "package.json": "{}", "host.json": JSON.stringify({ extensions: { durableTask } }) }),
      ).durableConcurrency;
    expect(limits({ maxConcurrentActivityFunctions: 3, maxConcurrentOrchestratorFunctions: 7 })).toEqual({
      activities: 3,
      orchestrations: 7,
    });
    expect(limits({ maxConcurrentActivityFunctions: 0, maxConcurrentOrchestratorFunctions: "7" })).toEqual(
      {},
    );
    expect(limits({ maxConcurrentActivityFunctions: 2.5 })).toEqual({});
  });

  it("says which file is broken", () => {
    expect(() => readAppConfig(app({ "package.json": "{}", "host.json": "{oops" }))).toThrow(
      /host.json .* is not valid/,
    );
    expect(() => readAppConfig(app({}))).toThrow(/No package.json/);
    const encrypted = app({ "package.json": "{}", "local.settings.json": '{"IsEncrypted":true}' });
    expect(() => readAppConfig(encrypted)).toThrow(/encrypted/);
  });

  it("puts settings into the environment unless the real environment has them", () => {
    const env: NodeJS.ProcessEnv = { KEEP: "real" };
    expect(applySettings({ KEEP: "file", NEW: "file" }, env)).toEqual(["NEW"]);
    expect(env).toEqual({ KEEP: "real", NEW: "file" });
  });

  it("resolves %SETTING% expressions and names an unset one", () => {
    const env = { DB: "appdb", C: "items" };
    expect(resolveSettingExpressions("%DB%/%C%-x", "here", env)).toBe("appdb/items-x");
    expect(() => resolveSettingExpressions("%MISSING%", "Function 'f'", env)).toThrow(
      /Function 'f': '%MISSING%' does not resolve to a value/,
    );
  });
});

describe("entry point globs (package.json main)", () => {
  it("expands braces and matches *, ** like globby, in pattern order", () => {
    expect(expandBraces("dist/src/{index.js,functions/*.js}")).toEqual([
      "dist/src/index.js",
      "dist/src/functions/*.js",
    ]);
    const dir = app({
      "dist/src/index.js": "",
      "dist/src/functions/b.js": "",
      "dist/src/functions/a.js": "",
      "dist/src/functions/a.js.map": "",
      "dist/src/functions/.hidden.js": "",
      "dist/src/deep/x/y.js": "",
    });
    expect(globFiles("dist/src/{index.js,functions/*.js}", dir)).toEqual([
      "dist/src/index.js",
      "dist/src/functions/a.js",
      "dist/src/functions/b.js",
    ]);
    expect(globFiles("./dist/**/*.js", dir)).toContain("dist/src/deep/x/y.js");
    expect(globFiles("dist/*.js", dir)).toEqual([]);
  });

  it("decides ESM vs CommonJS as the worker does", () => {
    expect(isESModule("a.mjs", undefined)).toBe(true);
    expect(isESModule("a.cjs", "module")).toBe(false);
    expect(isESModule("a.js", "module")).toBe(true);
    expect(isESModule("a.js", "commonjs")).toBe(false);
  });
});

describe("host.json log levels", () => {
  it("applies the longest matching category prefix, else default", () => {
    const dir = app({
      "package.json": "{}",
      "host.json": JSON.stringify({
        logging: { logLevel: { default: "Warning", Function: "Information", "Function.noisy.User": "None" } },
      }),
    });
    const config = readAppConfig(dir);
    const logger = new HostLogger({ minLevel: config.logLevel, categoryLevels: config.categoryLogLevels });
    expect(logger.isEnabled("information", "Host")).toBe(false);
    expect(logger.isEnabled("warning", "Host")).toBe(true);
    expect(logger.isEnabled("information", "Function.hello.User")).toBe(true);
    expect(logger.isEnabled("error", "Function.noisy.User")).toBe(false);
    expect(logger.isEnabled("information", "Function.noisy")).toBe(true);
    expect(logger.isEnabled("information", "Functionally")).toBe(false);
  });
});

describe("host.json extensionBundle", () => {
  const bundleOf = (extensionBundle: unknown) =>
    readAppConfig(
      app({ "package.json": "{}", "host.json": JSON.stringify({ version: "2.0", extensionBundle }) }),
    ).extensionBundle;
  const id = "Microsoft.Azure.Functions.ExtensionBundle";

  it("takes the newest bundle major the range admits, and the Cosmos DB extension it brings", () => {
    const cases: [string, number, 3 | 4][] = [
      ["[4.*, 5.0.0)", 4, 4],
      ["[3.*, 4.0.0)", 3, 3],
      ["[3.3.0, 4.0.0)", 3, 3],
      ["[2.*, 3.0.0)", 2, 3],
      ["[3.*, 5.0.0)", 4, 4],
      ["[4.2.0]", 4, 4],
      ["(3.0.0, 4.0.0]", 4, 4],
      ["(, 4.0.0)", 3, 3],
      ["3.15.0", 4, 4],
    ];
    for (const [version, major, cosmos] of cases) {
      const bundle = bundleOf({ id, version });
      expect({ version, major: bundle?.major, cosmos: cosmosExtensionMajor(bundle) }).toEqual({
        version,
        major,
        cosmos,
      });
    }
    expect(bundleOf(undefined)).toBeUndefined();
    expect(cosmosExtensionMajor(undefined)).toBeUndefined();
  });

  it("refuses what the host refuses: bundle 1.x, a range that is not one, a bundle without a version", () => {
    const refused = (extensionBundle: unknown) => {
      try {
        bundleOf(extensionBundle);
      } catch (e) {
        expect(e).toBeInstanceOf(DevHostError);
        expect((e as DevHostError).code).toBe("InvalidExtensionBundle");
        return (e as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(extensionBundle)}`);
    };
    expect(refused({ id, version: "[1.*, 2.0.0)" })).toMatch(
      /does not meet the required minimum version of 2\.6\.1/,
    );
    expect(refused({ id, version: "[4.*, 5.0.0" })).toMatch(/not a valid version range/);
    expect(refused({ id, version: "[5.0.0, 4.0.0)" })).toMatch(/admits no version/);
    expect(refused({ id, version: "four" })).toMatch(/not a valid version range/);
    expect(refused({ id })).toMatch(/needs a string 'id' and 'version'/);
    expect(refused("[4.*, 5.0.0)")).toMatch(/must be an object/);
  });
});
