/**
 * `npm run publish:func -- <app>` (scripts/publish-func.mjs): what `func azure functionapp publish` ships is the
 * staged package — production dependencies only — and not the repository root, whose node_modules holds every
 * devDependency. Core Tools cannot run here (no Azure): a stand-in `func` on PATH records where and how it was called,
 * and the files Core Tools would zip from that folder are computed as Core Tools selects them
 * (support/core-tools-files.ts).
 */
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";
import { coreToolsPublishFiles } from "./support/core-tools-files.js";

const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
let dir: string;
let call: { cwd: string; args: string[]; runtime: string | undefined };
let shipped: string[];

const publish = (args: string[], path: string) =>
  promisify(execFile)(process.execPath, [join(repoRoot, "scripts", "publish-func.mjs"), ...args], {
    cwd: repoRoot,
    env: { ...process.env, PATH: path },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, out: stdout + stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "func-publish-"));
  const bin = join(dir, "bin");
  mkdirSync(bin);
  // The stand-in: records its working folder, arguments and worker runtime, as JSON.
  writeFileSync(
    join(bin, "func"),
    `#!${process.execPath}\nrequire("node:fs").writeFileSync(${JSON.stringify(join(dir, "call.json"))}, JSON.stringify({ cwd: process.cwd(), args: process.argv.slice(2), runtime: process.env.FUNCTIONS_WORKER_RUNTIME }));\n`,
  );
  chmodSync(join(bin, "func"), 0o755);
  const run = await publish(
    ["func-x", "--stage", join(dir, "stage"), "--show-keys"],
    `${bin}${delimiter}${process.env.PATH}`,
  );
  expect(run.code, run.out).toBe(0);
  call = JSON.parse(readFileSync(join(dir, "call.json"), "utf8"));
  shipped = coreToolsPublishFiles(call.cwd);
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("publish:func: Core Tools publishes the staged package", () => {
  it("runs `func azure functionapp publish <app> --no-build` in the staged folder, as a Node app", () => {
    expect(call.cwd).toBe(join(dir, "stage"));
    expect(call.args).toEqual(["azure", "functionapp", "publish", "func-x", "--no-build", "--show-keys"]);
    expect(call.runtime).toBe("node");
    // Core Tools reads the runtime from local.settings.json too, and never ships it.
    expect(JSON.parse(readFileSync(join(call.cwd, "local.settings.json"), "utf8")).Values).toEqual({
      FUNCTIONS_WORKER_RUNTIME: "node",
    });
    expect(shipped).not.toContain("local.settings.json");
  });

  it("the files it would ship: the compiled app, host.json, package.json and the production dependencies only", () => {
    expect(shipped).toEqual(
      expect.arrayContaining(["host.json", "package.json", "dist/functions/resources.js"]),
    );
    const packages = new Set(
      shipped
        .filter((f) => f.startsWith("node_modules/"))
        .map((f) =>
          f
            .split("/")
            .slice(1, f.startsWith("node_modules/@") ? 3 : 2)
            .join("/"),
        ),
    );
    for (const name of Object.keys(pkg.dependencies)) expect(packages.has(name), name).toBe(true);
    for (const name of Object.keys(pkg.devDependencies)) expect(packages.has(name), name).toBe(false);
    for (const prefix of [
      "src/",
      "test/",
      "functions/",
      "infra/",
      "scripts/",
      "dist/src/devhost/",
      "dist/src/emulator/",
    ])
      expect(
        shipped.filter((f) => f.startsWith(prefix)),
        prefix,
      ).toEqual([]);
  });

  it("without Core Tools, or without an app name: one line saying what to do, exit 1, nothing staged", async () => {
    const none = await publish(["func-x", "--stage", join(dir, "none")], join(dir, "empty-path"));
    expect(none.code).toBe(1);
    expect(none.out).toBe(
      "publish:func needs Azure Functions Core Tools v4 ('func' on PATH): npm i -g azure-functions-core-tools@4; `azd deploy` ships the same package without it.\n",
    );
    expect(existsSync(join(dir, "none"))).toBe(false);
    const unnamed = await publish([], process.env.PATH ?? "");
    expect(unnamed).toEqual({
      code: 1,
      out: "publish:func: name the function app: npm run publish:func -- <function app name> [func options]\n",
    });
  });
});
