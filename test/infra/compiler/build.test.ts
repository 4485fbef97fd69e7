/**
 * infra/bicep compiled by the pinned Bicep CLI (scripts/bicep-restore/bicep-restore.csproj) with
 * infra/bicep/bicepconfig.json's linter rules: `bicep build` of main.bicep and of every module with zero errors and
 * zero warnings; the compiled template loads the app's own containers.json; and main().parameters.json, as azd feeds
 * it, fits main.bicep's parameters — checked by Bicep itself with `bicep build-params`.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  azdParameters,
  environment,
  firstDeployment,
  type TemplateParameter,
  typedValue,
} from "./support/azd-parameters.js";
import {
  bicep,
  bicepConfig,
  bicepFiles,
  type Diagnostic,
  infra,
  type Run,
  removeScratches,
  root,
  sarifDiagnostics,
  scratch,
  writeBicepParams,
} from "./support/bicep.js";

interface Template {
  languageVersion?: string;
  parameters: Record<string, TemplateParameter>;
  variables: Record<string, unknown>;
  resources: Record<string, { type: string; properties?: { template?: Template } }>;
  outputs: Record<string, { type: string }>;
}

const files = bicepFiles(infra);
let outdir: string;
let build: Run;
let diagnostics: Diagnostic[];
let compiled: Template | undefined;

/** main.bicep's ARM template; absent when the build failed (the first test then lists why). */
function main(): Template {
  if (!compiled)
    throw new Error(
      `no compiled main.json:\n${diagnostics.map((d) => `${d.file}:${d.line} ${d.code}`).join("\n")}`,
    );
  return compiled;
}

beforeAll(async () => {
  outdir = scratch("build");
  // One process for every file (the CLI's start-up is most of its time); a SARIF log per file on stderr.
  build = await bicep([
    "build",
    "--pattern",
    "infra/bicep/**/*.bicep",
    "--outdir",
    outdir,
    "--config",
    bicepConfig,
    "--diagnostics-format",
    "sarif",
  ]);
  // With --outdir, Bicep writes nothing else; its SARIF logs go to stderr (read both, so none can be missed).
  diagnostics = sarifDiagnostics(build.stdout + build.stderr);
  const mainJson = join(outdir, "main.json");
  compiled = existsSync(mainJson) ? (JSON.parse(readFileSync(mainJson, "utf8")) as Template) : undefined;
});

afterAll(removeScratches);

describe("bicep build: main.bicep and every module", () => {
  it("is the pinned Bicep", async () => {
    const pinned = /<BicepVersion>([^<]+)</.exec(
      readFileSync(join(root, "scripts", "bicep-restore", "bicep-restore.csproj"), "utf8"),
    )?.[1];
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    const { stdout } = await bicep(["--version"]);
    expect(stdout).toContain(`Bicep CLI version ${pinned} `);
  });

  it("compiles every .bicep file with zero errors and zero warnings", () => {
    expect(files).toEqual(
      expect.arrayContaining(["infra/bicep/main.bicep", "infra/bicep/modules/cosmos.bicep"]),
    );
    expect(files.length).toBeGreaterThanOrEqual(9);
    // Every diagnostic, at any level: a warning is as much a failure here as an error.
    expect(diagnostics.map((d) => `${d.file}:${d.line} ${d.level} ${d.code}: ${d.message}`)).toEqual([]);
    expect(build.status, build.stderr).toBe(0);
    for (const file of files) {
      const json = join(outdir, file.replace(/^infra\/bicep\//, "").replace(/\.bicep$/, ".json"));
      expect(() => JSON.parse(readFileSync(json, "utf8")), json).not.toThrow();
    }
  });

  it("main.bicep compiles each module into its template, typed (language version 2.0), and declares a resource group", () => {
    expect(main().languageVersion).toBe("2.0");
    const modules = Object.entries(main().resources).filter(
      ([, r]) => r.type === "Microsoft.Resources/deployments",
    );
    expect(modules.map(([name]) => name).sort()).toEqual(
      [
        "api",
        "cosmos",
        "identity",
        "monitoring",
        "rbac",
        "scheduler",
        "storage",
        // Private networking (vnetEnabled): the network and one private endpoint module per target.
        "network",
        "cosmosEndpoint",
        "storageEndpoints",
        "schedulerEndpoint",
      ].sort(),
    );
    for (const [name, r] of modules) expect(r.properties?.template?.resources, name).toBeDefined();
    expect(main().resources.rg?.type).toBe("Microsoft.Resources/resourceGroups");
  });

  it("takes the containers from src/shared/containers.json itself: loadJsonContent puts the file's content in the template", () => {
    const file = JSON.parse(readFileSync(join(root, "src", "shared", "containers.json"), "utf8")) as unknown;
    // Bicep keeps a loaded file's content in a variable of its own ($fxv#…) that the named variable points at.
    const named = main().variables.containerDefinition;
    const pointer = /^\[variables\('([^']+)'\)\]$/.exec(String(named))?.[1];
    expect(pointer, String(named)).toMatch(/^\$fxv#\d+$/);
    expect(main().variables[pointer as string]).toEqual(file);
  });

  it("no template lists keys or connection strings, and no output is secure-typed or named like a secret", () => {
    const text = readFileSync(join(outdir, "main.json"), "utf8");
    expect(text).not.toMatch(
      /listKeys\(|listConnectionStrings\(|listAccountSas\(|primaryMasterKey|AccountKey=/i,
    );
    const outputs = (t: Template): [string, { type: string }][] => [
      ...Object.entries(t.outputs ?? {}),
      ...Object.values(t.resources).flatMap((r) =>
        r.properties?.template ? outputs(r.properties.template) : [],
      ),
    ];
    const all = outputs(main());
    expect(all.length).toBeGreaterThanOrEqual(8);
    for (const [name, o] of all) {
      expect(o.type.toLowerCase(), name).not.toMatch(/^secure/);
      expect(name).not.toMatch(/key|secret|password/i);
    }
  });
});

describe("main().parameters.json against main.bicep's compiled parameters", () => {
  it("names declared parameters only, and feeds every parameter that has no default", () => {
    const names = azdParameters().map((p) => p.name);
    for (const name of names) expect(Object.keys(main().parameters), name).toContain(name);
    const required = Object.entries(main().parameters)
      .filter(([, p]) => !("defaultValue" in p))
      .map(([name]) => name);
    expect(required.sort()).toEqual(["authClientId", "environmentName", "location"]);
    for (const name of required) expect(names, name).toContain(name);
  });

  it("each azd default converts to its parameter's type, is allowed, and equals main.bicep's own default", () => {
    const withDefault = azdParameters().filter((p) => p.fallback !== undefined);
    expect(withDefault.length).toBeGreaterThanOrEqual(25);
    for (const p of withDefault) {
      const declared = main().parameters[p.name] as TemplateParameter;
      const value = typedValue(p.fallback as string, declared.type);
      if (declared.allowedValues) expect(declared.allowedValues, p.name).toContain(value);
      // Two places say the default (azd's variable, Bicep's parameter): they must not drift apart.
      expect(value, p.name).toEqual(declared.defaultValue);
    }
    // The integers and booleans are typed as such in main.bicep (a string would take any text).
    const types = Object.fromEntries(withDefault.map((p) => [p.name, main().parameters[p.name]?.type]));
    expect(types).toMatchObject({
      feedPollDelayMs: "int",
      cosmosSharedThroughput: "bool",
      lockContentionStatus: "int",
    });
  });

  it("bicep build-params accepts the first deployment's parameters (azd's defaults, main.bicep's types and allowed values), with zero diagnostics", async () => {
    const dir = scratch("params");
    const values = firstDeployment(main().parameters);
    expect(values).toMatchObject({ environmentName: environment.environmentName, feedPollDelayMs: 1000 });
    const params = writeBicepParams(dir, "first-deployment", values);
    const run = await bicep([
      "build-params",
      params,
      "--outfile",
      join(dir, "first-deployment.parameters.json"),
      "--config",
      bicepConfig,
      "--diagnostics-format",
      "sarif",
    ]);
    expect(sarifDiagnostics(run.stderr)).toEqual([]);
    expect(run.status, run.stderr).toBe(0);
    const built = JSON.parse(readFileSync(join(dir, "first-deployment.parameters.json"), "utf8")) as {
      parameters: Record<string, { value: unknown }>;
    };
    for (const [name, value] of Object.entries(values))
      expect(built.parameters[name]?.value, name).toEqual(value);
  });

  it("bicep build-params refuses a value main.bicep does not allow (the check above can fail)", async () => {
    const dir = scratch("params");
    const values = { ...firstDeployment(main().parameters), lockContentionStatus: 500 };
    const run = await bicep([
      "build-params",
      writeBicepParams(dir, "refused", values),
      "--stdout",
      "--config",
      bicepConfig,
      "--diagnostics-format",
      "sarif",
    ]);
    expect(run.status).not.toBe(0);
    expect(
      sarifDiagnostics(run.stderr)
        .filter((d) => d.level === "error")
        .map((d) => d.code),
    ).toContain("BCP033");
  });
});
