/**
 * azure.yaml against what azd requires of it — its published schema
 * (https://github.com/Azure/azure-dev/blob/main/schemas/v1.0/azure.yaml.json: the names, hooks and hook keys below
 * are that schema's) and what this project relies on: one service `api` (host function, language ts, the staged
 * package as `dist`, no remote build) that Bicep tags; the azd version that counts only the host when it looks for the
 * tagged resource; and every hook with a `posix` and a `windows` entry running the same Node script, which exists.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseYamlMappings, type YamlMapping, type YamlValue } from "./support/yaml-mappings.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const yaml = parseYamlMappings(readFileSync(join(root, "azure.yaml"), "utf8"));

// From azd's schema: the top-level properties, the command-level and service-level hook names, a hook's keys.
const TOP_LEVEL = [
  "name",
  "resourceGroup",
  "metadata",
  "infra",
  "services",
  "resources",
  "pipeline",
  "hooks",
  "requiredVersions",
  "state",
  "platform",
  "workflows",
  "cloud",
];
const COMMAND_HOOKS = [
  "preprovision",
  "postprovision",
  "preinfracreate",
  "postinfracreate",
  "preinfradelete",
  "postinfradelete",
  "predown",
  "postdown",
  "preup",
  "postup",
  "prepackage",
  "postpackage",
  "prepublish",
  "postpublish",
  "predeploy",
  "postdeploy",
  "prerestore",
  "postrestore",
];
const SERVICE_HOOKS = [
  "predeploy",
  "postdeploy",
  "prerestore",
  "postrestore",
  "prebuild",
  "postbuild",
  "prepackage",
  "postpackage",
  "prepublish",
  "postpublish",
];
const HOOK_KEYS = [
  "shell",
  "kind",
  "dir",
  "run",
  "continueOnError",
  "interactive",
  "windows",
  "posix",
  "secrets",
];

const map = (v: YamlValue | undefined): YamlMapping => {
  if (typeof v !== "object") throw new Error(`expected a mapping, got ${JSON.stringify(v)}`);
  return v;
};
const services = map(yaml.services);
const api = map(services.api);

/** Every hook of azure.yaml: where it is, its name, its configuration. */
function hooks(): { where: string; name: string; hook: YamlMapping }[] {
  const out = Object.entries(map(yaml.hooks)).map(([name, hook]) => ({
    where: "hooks",
    name,
    hook: map(hook),
  }));
  for (const [service, config] of Object.entries(services)) {
    const own = map(config).hooks;
    if (own !== undefined)
      for (const [name, hook] of Object.entries(map(own)))
        out.push({ where: `services.${service}.hooks`, name, hook: map(hook) });
  }
  return out;
}

describe("azure.yaml: what azd requires of it", () => {
  it("a valid name, known top-level properties, the Bicep infrastructure", () => {
    expect(yaml.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    for (const key of Object.keys(yaml)) expect(TOP_LEVEL, key).toContain(key);
    expect(yaml.infra).toEqual({ provider: "bicep", path: "infra/bicep" });
    expect(existsSync(join(root, "infra", "bicep", "main.bicep"))).toBe(true);
  });

  it("requires azd 1.23.4 or later: before it, azd counts every tagged resource and fails `azd deploy`", () => {
    const required = map(yaml.requiredVersions);
    expect(Object.keys(required)).toEqual(["azd"]);
    const range = /^>=\s*(\d+)\.(\d+)\.(\d+)$/.exec(String(required.azd));
    expect(range, String(required.azd)).not.toBeNull();
    const [major, minor, patch] = (range as RegExpExecArray).slice(1).map(Number) as [number, number, number];
    expect(major * 1e6 + minor * 1e3 + patch).toBeGreaterThanOrEqual(1_023_004);
  });

  it("one service, api: host function, language ts, the staged package as dist, no remote build; Bicep tags its site", () => {
    expect(Object.keys(services)).toEqual(["api"]);
    expect(api).toMatchObject({ project: ".", host: "function", language: "ts", remoteBuild: false });
    expect(api.dist).toBe(".data/package/app");
    // The prepackage hook stages exactly that folder (scripts/package.mjs --stage).
    const prepackage = map(map(api.hooks).prepackage);
    expect(map(prepackage.posix).run).toBe(`node scripts/package.mjs --stage ${api.dist}`);
    // The service name is the azd-service-name tag Bicep puts on the function app (and on nothing else).
    expect(readFileSync(join(root, "infra", "bicep", "main.bicep"), "utf8")).toContain(
      "azdServiceName: 'api'",
    );
  });

  it("every hook has a posix and a windows entry, each a known hook with known keys, running the same Node script", () => {
    const all = hooks();
    expect(all.map((h) => `${h.where}.${h.name}`).sort()).toEqual(
      ["hooks.postdeploy", "hooks.postprovision", "services.api.hooks.prepackage"].sort(),
    );
    for (const { where, name, hook } of all) {
      const at = `${where}.${name}`;
      expect(where === "hooks" ? COMMAND_HOOKS : SERVICE_HOOKS, at).toContain(name);
      // Without an entry for the OS, azd falls back to the hook's top-level run: there must be none to fall to.
      expect(Object.keys(hook).sort(), at).toEqual(["posix", "windows"]);
      const posix = map(hook.posix);
      const windows = map(hook.windows);
      for (const [os, entry] of [
        ["posix", posix],
        ["windows", windows],
      ] as const) {
        for (const key of Object.keys(entry)) expect(HOOK_KEYS, `${at}.${os}.${key}`).toContain(key);
        expect(entry.shell, `${at}.${os}`).toBe(os === "posix" ? "sh" : "pwsh");
        const script = /^node (\S+\.mjs)(?: |$)/.exec(String(entry.run))?.[1];
        expect(script, `${at}.${os}: ${entry.run}`).toBeDefined();
        expect(existsSync(join(root, script as string)), `${at}.${os}: ${script}`).toBe(true);
      }
      expect(windows.run, at).toBe(posix.run);
    }
  });

  it("the postprovision and postdeploy hooks stop azd when they fail", () => {
    for (const name of ["postprovision", "postdeploy"]) {
      const hook = map(map(yaml.hooks)[name]);
      for (const os of ["posix", "windows"]) {
        expect(map(hook[os]), `${name}.${os}`).toMatchObject({ continueOnError: false, interactive: false });
      }
    }
    expect(map(map(map(yaml.hooks).postdeploy).posix).run).toBe("node scripts/hooks/postdeploy.mjs");
    expect(map(map(map(yaml.hooks).postprovision).posix).run).toBe("node scripts/hooks/postprovision.mjs");
  });
});

describe("the reader of azure.yaml refuses what it cannot read", () => {
  it("a sequence, a flow mapping or a duplicate key is an error naming the line", () => {
    expect(() => parseYamlMappings("a:\n  - b\n")).toThrow(/azure.yaml:2/);
    expect(() => parseYamlMappings("a: { b: c }\n")).toThrow(/azure.yaml:1/);
    expect(() => parseYamlMappings("a: 1\na: 2\n")).toThrow(/appears twice/);
    expect(parseYamlMappings("# c\na:\n  b: 'x' # c\n  c: true\n")).toEqual({ a: { b: "x", c: true } });
  });
});
