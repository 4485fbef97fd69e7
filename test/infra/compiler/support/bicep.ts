// Runs the pinned Bicep CLI (scripts/bicep.mjs: restored from NuGet into .data/tools/bicep) for the compiler tests,
// and reads what it says: SARIF diagnostics, compiled ARM templates, deployment snapshots.
import { execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const root = fileURLToPath(new URL("../../../..", import.meta.url));
export const infra = join(root, "infra", "bicep");
export const bicepConfig = join(infra, "bicepconfig.json");

let cliPath: Promise<string> | undefined;

/** The Bicep executable (restored on first use when the cache is empty). */
export function bicepCli(): Promise<string> {
  cliPath ??= promisify(execFile)(process.execPath, [join(root, "scripts", "bicep.mjs"), "--path"], {
    cwd: root,
  }).then(({ stdout }) => stdout.trim());
  return cliPath;
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `bicep <args>` in the repository root; never throws on a non-zero exit (the caller judges it). */
export async function bicep(args: string[]): Promise<Run> {
  const cli = await bicepCli();
  return new Promise((resolve, reject) => {
    const child = spawn(cli, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

export interface Diagnostic {
  /** Path relative to the repository root. */
  file: string;
  line: number;
  level: string;
  code: string;
  message: string;
}

interface SarifLog {
  runs: {
    results?: {
      ruleId: string;
      level: string;
      message: { text: string };
      locations?: {
        physicalLocation: { artifactLocation: { uri: string }; region?: { startLine?: number } };
      }[];
    }[];
  }[];
}

/** Splits text holding several JSON documents one after another (Bicep writes one SARIF log per file). */
export function jsonDocuments(text: string): unknown[] {
  const out: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{") {
      if (depth++ === 0) start = i;
    } else if (ch === "}" && --depth === 0) {
      out.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return out;
}

/** Every diagnostic of Bicep's SARIF output (`--diagnostics-format sarif`, written to stderr). */
export function sarifDiagnostics(text: string): Diagnostic[] {
  return (jsonDocuments(text) as SarifLog[]).flatMap((log) =>
    log.runs.flatMap((run) =>
      (run.results ?? []).map((r) => {
        const location = r.locations?.[0]?.physicalLocation;
        return {
          file: location ? relative(root, fileURLToPath(location.artifactLocation.uri)) : "",
          line: location?.region?.startLine ?? 0,
          level: r.level,
          code: r.ruleId,
          message: r.message.text.replace(/ \[https:[^\]]*\]$/, ""),
        };
      }),
    ),
  );
}

/** Every .bicep file under `dir`, relative to the repository root. */
export function bicepFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? bicepFiles(join(dir, e.name))
      : e.name.endsWith(".bicep")
        ? [relative(root, join(dir, e.name))]
        : [],
  );
}

const scratches: string[] = [];

/** A scratch folder under .data/infra/test (git-ignored; inside the repository so `using` paths can be relative). */
export function scratch(prefix: string): string {
  const parent = join(root, ".data", "infra", "test");
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(join(parent, `${prefix}-`));
  scratches.push(dir);
  return dir;
}

/** Removes the scratch folders this test file made (for an afterAll). */
export function removeScratches(): void {
  for (const dir of scratches.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export type ParameterValue = string | number | boolean | string[];

/** A value as a Bicep literal: strings single-quoted, with Bicep's escapes for \, ' and ${. */
export function bicepLiteral(value: ParameterValue): string {
  if (Array.isArray(value)) return `[${value.map(bicepLiteral).join(", ")}]`;
  if (typeof value === "string") {
    return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\$\{/g, "\\${")}'`;
  }
  return String(value);
}

/** Writes `<dir>/<name>.bicepparam` for infra/bicep/main.bicep with these values; returns its path. */
export function writeBicepParams(dir: string, name: string, values: Record<string, ParameterValue>): string {
  const file = join(dir, `${name}.bicepparam`);
  const using = relative(dir, join(infra, "main.bicep")).split("\\").join("/");
  const lines = [
    `using '${using}'`,
    ...Object.entries(values).map(([k, v]) => `param ${k} = ${bicepLiteral(v)}`),
  ];
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

/** Where a snapshot deploys: the subscription and tenant ids are made up; nothing reaches Azure. */
export const deployment = {
  subscriptionId: "3c0e8a52-0000-4000-8000-000000000001",
  tenantId: "7a2f1d94-0000-4000-8000-000000000002",
  location: "westeurope",
  name: "test-infra",
};

export interface PredictedResource {
  id: string;
  type: string;
  name: string;
  apiVersion: string;
  location?: string;
  kind?: string;
  tags?: Record<string, string>;
  sku?: Record<string, unknown>;
  identity?: { type: string; userAssignedIdentities?: Record<string, unknown> };
  properties?: Record<string, unknown>;
}

export interface Snapshot {
  predictedResources: PredictedResource[];
  diagnostics: unknown[];
  outputs: Record<string, unknown>;
}

/**
 * `bicep snapshot`: the deployment of main.bicep with these parameters, evaluated by the ARM template engine inside
 * Bicep as Azure would (loops unrolled, conditions applied, names and ids computed) — except for values known only
 * once a resource exists (an identity's principal id, an endpoint), which stay ARM expressions.
 */
export async function snapshot(dir: string, name: string, values: Record<string, ParameterValue>) {
  const params = writeBicepParams(dir, name, values);
  const run = await bicep([
    "snapshot",
    params,
    "--mode",
    "overwrite",
    "--config",
    bicepConfig,
    "--subscription-id",
    deployment.subscriptionId,
    "--tenant-id",
    deployment.tenantId,
    "--location",
    deployment.location,
    "--deployment-name",
    deployment.name,
  ]);
  if (run.status !== 0)
    throw new Error(`bicep snapshot ${name} failed (${run.status}):\n${run.stdout}${run.stderr}`);
  const result = JSON.parse(readFileSync(join(dir, `${name}.snapshot.json`), "utf8")) as Snapshot;
  return { ...result, stderr: run.stderr };
}
