// The HTTP routes the app's functions register (name, full path under host.json's route prefix, methods, auth
// level), read from a child process that loads every entry of functions/ the way the Functions host does. Both
// infra tests judge App Service Authentication's excluded paths against these.
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const root = fileURLToPath(new URL("../../..", import.meta.url));

export interface HttpRoute {
  name: string;
  path: string;
  methods: string[];
  authLevel: string | undefined;
}

export async function httpRoutes(): Promise<HttpRoute[]> {
  const capture = join(root, "test", "devhost", "support", "capture-registrations.cjs");
  const entries = readdirSync(join(root, "functions"))
    .filter((f) => f.endsWith(".ts"))
    .map((f) => `functions/${f}`);
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", capture, ...entries], {
    cwd: root,
  });
  const registrations = JSON.parse(stdout) as {
    name: string;
    bindings: Record<string, { type: string; route?: string; methods?: string[]; authLevel?: string }>;
  }[];
  const host = JSON.parse(readFileSync(join(root, "host.json"), "utf8")) as {
    extensions: { http: { routePrefix: string } };
  };
  return registrations.flatMap((r) =>
    Object.values(r.bindings)
      .filter((b) => b.type === "httpTrigger")
      .map((b) => ({
        name: r.name,
        path: `/${host.extensions.http.routePrefix}/${b.route}`,
        methods: (b.methods ?? []).map((m) => m.toUpperCase()),
        authLevel: b.authLevel,
      })),
  );
}

/** Whether App Service Authentication lets `path` through without a token, given its excluded paths. */
export function isExcluded(excludedPaths: string[], path: string): boolean {
  return excludedPaths.some((e) => path === e || path.startsWith(`${e}/`));
}
