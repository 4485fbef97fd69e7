import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The page's scripts: `client/*.ts` transpiled to ES modules with the project's own `typescript`
 * (`ts.transpileModule`, no type checking — `npm run typecheck` checks them with the DOM library), on first request
 * and again when the file changes. No bundler, no build step: a fresh clone serves the page, and `npm run build`
 * (tsconfig.build.json) leaves the browser code alone. From source (bin/cosmos-feed.js registers tsx) `client/`
 * sits next to this file; the package's build copies it beside the compiled one (scripts/build-packages.mjs), and a
 * compiled copy in the repository falls back to the source tree.
 */
const candidates = [
  fileURLToPath(new URL("./client/", import.meta.url)),
  // packages/devhost/dist/dashboard → packages/devhost/src/dashboard/client
  fileURLToPath(new URL("../../src/dashboard/client/", import.meta.url)),
];

export function clientDir(): string | undefined {
  return candidates.find((d) => existsSync(join(d, "app.ts")));
}

const MODULE = /^[a-z][a-z0-9-]*$/;
const cache = new Map<string, { mtimeMs: number; js: string }>();

/** The transpiled module `name` (`app`, `plot` …, without extension), or undefined when there is none. */
export async function clientModule(name: string): Promise<string | undefined> {
  if (!MODULE.test(name)) return undefined;
  const dir = clientDir();
  if (!dir) return undefined;
  const file = join(dir, `${name}.ts`);
  if (!existsSync(file)) return undefined;
  const { mtimeMs } = statSync(file);
  const hit = cache.get(file);
  if (hit && hit.mtimeMs === mtimeMs) return hit.js;
  const ts = (await import("typescript")).default;
  const out = ts.transpileModule(readFileSync(file, "utf8"), {
    fileName: file,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ES2022,
      verbatimModuleSyntax: true,
      sourceMap: false,
      removeComments: false,
    },
    reportDiagnostics: false,
  });
  cache.set(file, { mtimeMs, js: out.outputText });
  return out.outputText;
}

/** The stylesheet (client/app.css). */
export function clientCss(): string | undefined {
  const dir = clientDir();
  const file = dir && join(dir, "app.css");
  return file && existsSync(file) ? readFileSync(file, "utf8") : undefined;
}
