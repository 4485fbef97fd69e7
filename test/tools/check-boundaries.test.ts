/**
 * scripts/check-boundaries.mjs, the dependency rule `npm run lint` enforces (docs/packages.md): on a small tree with
 * one violation of each kind, each is reported (file:line, what, why) and the command fails; on this repository,
 * none is.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";

const script = join(repoRoot, "scripts", "check-boundaries.mjs");
const run = (root: string) =>
  promisify(execFile)(process.execPath, [script, root]).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );

const trees: string[] = [];
afterAll(() => {
  for (const t of trees) rmSync(t, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "boundaries-"));
  trees.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const manifest = (name: string, extra: object = {}) =>
  JSON.stringify({ name, exports: { ".": "./src/index.ts", "./public": "./src/public.ts" }, ...extra });

describe("check-boundaries: the dependency rule", () => {
  it("reports each kind of violation on its own line, file:line first, and fails", async () => {
    const root = tree({
      "package.json": JSON.stringify({ name: "app", dependencies: { "@cosmos-feed/a": "0.1.0" } }),
      "packages/a/package.json": manifest("@cosmos-feed/a"),
      "packages/a/src/index.ts": 'export * from "./public.js";\n',
      "packages/a/src/public.ts": "export const a = 1;\n",
      "packages/a/src/internal.ts": "export const secret = 2;\n",
      "packages/b/package.json": manifest("@cosmos-feed/b", { dependencies: { "@cosmos-feed/a": "0.1.0" } }),
      "packages/b/src/index.ts": [
        'import { a } from "@cosmos-feed/a";', // fine: listed, exported
        'import { secret } from "../../a/src/internal.js";', // 2: relative, into a sibling's internals
        'import { secret as s } from "@cosmos-feed/a/internal";', // 3: a subpath a's exports do not name
        'import { c } from "@cosmos-feed/c";', // 4: a sibling b does not list
        'export { settings } from "../../../src/settings.js";', // 5: the app's code
        "export const b = [a, secret, s, c];",
        "",
      ].join("\n"),
      "packages/c/package.json": manifest("@cosmos-feed/c"),
      "packages/c/src/index.ts":
        "export const c = 3;\nexport const later = () => import('../../b/src/index.js');\n",
      "src/settings.ts": "export const settings = {};\n",
      "functions/f.ts": 'import { a } from "../packages/a/src/public.js";\nexport const f = a;\n',
      "bench/x.ts": 'import { helper } from "../test/support/helper.js";\nexport const x = helper;\n',
    });
    const { code, stderr } = await run(root);
    expect(code).toBe(1);
    const lines = stderr.trim().split("\n");
    const line = (prefix: string) => lines.filter((l) => l.startsWith(prefix));
    expect(
      line("packages/b/src/index.ts:2: '../../a/src/internal.js' reaches into @cosmos-feed/a's internals"),
    ).toHaveLength(1);
    expect(
      line(
        "packages/b/src/index.ts:3: '@cosmos-feed/a/internal' @cosmos-feed/a's exports do not name './internal'",
      ),
    ).toHaveLength(1);
    expect(
      line(
        "packages/b/src/index.ts:4: '@cosmos-feed/c' @cosmos-feed/b imports @cosmos-feed/c, which its package.json does not list",
      ),
    ).toHaveLength(1);
    expect(
      line("packages/b/src/index.ts:5: '../../../src/settings.js' @cosmos-feed/b imports the app's code"),
    ).toHaveLength(1);
    // A dynamic import() is read too.
    expect(
      line("packages/c/src/index.ts:2: '../../b/src/index.js' reaches into @cosmos-feed/b's internals"),
    ).toHaveLength(1);
    // Outside packages/: the app's code through a package's folder, bench through the tests' code.
    expect(
      line("functions/f.ts:1: '../packages/a/src/public.js' reaches into @cosmos-feed/a's internals"),
    ).toHaveLength(1);
    expect(line("bench/x.ts:1: '../test/support/helper.js' imports the tests' code")).toHaveLength(1);
    expect(lines.at(-1)).toBe("check-boundaries: 7 import(s) break the dependency rule (docs/packages.md).");
    expect(lines).toHaveLength(8);
  });

  it("keeps the durable task hub's storage in its backend: the SDK in the engine, the documents outside it", async () => {
    const cosmos = { dependencies: { "@azure/cosmos": "4.9.3" } };
    const root = tree({
      "package.json": JSON.stringify({ name: "app" }),
      "packages/devhost/package.json": manifest("@cosmos-feed/devhost", cosmos),
      // Fine: the Cosmos DB backend talks to Cosmos DB and reads the documents.
      "packages/devhost/src/durable/cosmos-backend/backend.ts":
        'import type { Container } from "@azure/cosmos";\nimport type { InstanceDoc } from "../documents.js";\nexport type X = [Container, InstanceDoc];\n',
      "packages/devhost/src/durable/cosmos-backend/store.ts": "export class HubStore {}\n",
      "packages/devhost/src/durable/cosmos-backend/queries.ts": "export const q = 1;\n",
      "packages/devhost/src/durable/documents.ts": "export interface InstanceDoc { id: string }\n",
      // Fine: the engine reads the documents' shapes.
      "packages/devhost/src/durable/engine.ts":
        'import type { InstanceDoc } from "./documents.js";\nexport type E = InstanceDoc;\n',
      // 1: the dispatcher queries Cosmos DB itself.
      "packages/devhost/src/durable/dispatcher.ts":
        'import { BulkOperationType } from "@azure/cosmos";\nexport const d = BulkOperationType;\n',
      // 2, 3: the dashboard reads the hub's documents and the backend's queries (it may use the SDK otherwise).
      "packages/devhost/src/dashboard/instances.ts": [
        'import type { Container } from "@azure/cosmos";',
        'import type { InstanceDoc } from "../durable/documents.js";',
        'import { q } from "../durable/cosmos-backend/queries.js";',
        "export type I = [Container, InstanceDoc, typeof q];",
        "",
      ].join("\n"),
    });
    const { code, stderr } = await run(root);
    expect(code).toBe(1);
    const lines = stderr.trim().split("\n");
    expect(lines).toEqual([
      "packages/devhost/src/dashboard/instances.ts:2: '../durable/documents.js' reads the durable task hub's documents: go through its backend (TaskHubBackend) or the task hub's exports",
      "packages/devhost/src/dashboard/instances.ts:3: '../durable/cosmos-backend/queries.js' reads the durable task hub's documents: go through its backend (TaskHubBackend) or the task hub's exports",
      "packages/devhost/src/durable/dispatcher.ts:1: '@azure/cosmos' the durable task hub's storage is its backend's: only durable/cosmos-backend/ talks to Cosmos DB (go through TaskHubBackend)",
      "check-boundaries: 3 import(s) break the dependency rule (docs/packages.md).",
    ]);
  });

  it("finds none in this repository", async () => {
    expect(await run(repoRoot)).toEqual({
      code: 0,
      stdout: "check-boundaries: every import keeps to the dependency rule.\n",
      stderr: "",
    });
  });
});
