import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, vi } from "vitest";
import { WAIT_MS } from "../../bench/lib/until.js";
import type { BuiltinRequest } from "../../packages/devhost/src/http/server.js";
import { startDevHost } from "../../packages/devhost/src/index.js";

// The host's own endpoints (Durable's /runtime/webhooks/durabletask/…) are served before function routes, over a
// real socket: they see method, URL, lower-case headers and the whole body, and a signal aborted when the client
// goes away; undefined is a 404; a throw is a 500 with the stack in the log, and function routes are untouched.

const scratch = fileURLToPath(new URL("../../.data/test-apps", import.meta.url));
const created: string[] = [];
afterAll(() => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});

function appDir(): string {
  mkdirSync(scratch, { recursive: true });
  const dir = mkdtempSync(join(scratch, "builtin-"));
  created.push(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ main: "index.js" }));
  writeFileSync(
    join(dir, "index.js"),
    `const { app } = require("@azure/functions");
app.http("catchAll", { route: "{*rest}", handler: async (req) => ({ body: "function " + req.url }) });`,
  );
  writeFileSync(join(dir, "host.json"), JSON.stringify({ version: "2.0" }));
  return dir;
}

describe("built-in host routes", () => {
  it("answers under its prefix before any function route, and leaves the rest to functions", async () => {
    const seen: BuiltinRequest[] = [];
    const errors: string[] = [];
    const aborted: string[] = [];
    const host = await startDevHost({
      appDir: appDir(),
      port: 0,
      logSink: (r) => {
        if (r.level === "error") errors.push(r.message);
      },
      builtinRoutes: [
        {
          prefix: "/runtime/webhooks/durabletask/",
          handle: async (req) => {
            seen.push(req);
            if (req.url.pathname.endsWith("/boom")) throw new Error("endpoint exploded");
            if (req.url.pathname.endsWith("/missing")) return undefined;
            if (req.url.pathname.endsWith("/wait")) {
              // A long wait (Durable's create-and-wait) ends when the client goes away.
              await new Promise((resolve) => req.signal?.addEventListener("abort", resolve));
              aborted.push(req.url.pathname);
              return { status: 200 };
            }
            return { status: 202, headers: { "x-test": "yes" }, body: `got ${req.body.toString()}` };
          },
        },
      ],
    });
    try {
      const base = `${host.baseUrl}/runtime/webhooks/durabletask`;
      const res = await fetch(`${base}/instances/abc?showInput=true`, {
        method: "POST",
        // Not text/plain (fetch's default for a string): a built-in route refuses that as a form post (crossSite.ts).
        headers: { "X-Custom": "v", "content-type": "application/octet-stream" },
        body: "hello",
      });
      expect(res.status).toBe(202);
      expect(res.headers.get("x-test")).toBe("yes");
      expect(await res.text()).toBe("got hello");
      expect(seen[0].method).toBe("POST");
      expect(seen[0].url.searchParams.get("showInput")).toBe("true");
      expect(seen[0].headers["x-custom"]).toBe("v");

      expect((await fetch(`${base}/missing`)).status).toBe(404);
      const boom = await fetch(`${base}/boom`);
      expect(boom.status).toBe(500);
      expect(errors.some((m) => m.includes("endpoint exploded"))).toBe(true);

      const leaving = new AbortController();
      const waiting = fetch(`${base}/wait`, { signal: leaving.signal }).catch(() => "aborted");
      await vi.waitFor(() => expect(seen.at(-1)?.url.pathname).toMatch(/\/wait$/), { timeout: WAIT_MS });
      expect(seen.at(-1)?.signal?.aborted).toBe(false);
      leaving.abort();
      expect(await waiting).toBe("aborted");
      await vi.waitFor(() => expect(aborted).toEqual(["/runtime/webhooks/durabletask/wait"]), {
        timeout: WAIT_MS,
      });

      const fn = await fetch(`${host.baseUrl}/api/anything`);
      expect(fn.status).toBe(200);
      expect(await fn.text()).toContain("function ");
    } finally {
      await host.close();
    }
  });

  it("takes its prefix at a segment boundary, with or without a trailing '/', and only while enabled", async () => {
    let enabled = false;
    const host = await startDevHost({
      appDir: appDir(),
      port: 0,
      builtinRoutes: [
        { prefix: "/_one", handle: async (req) => ({ status: 200, body: `one ${req.url.pathname}` }) },
        { prefix: "/_two/", handle: async (req) => ({ status: 200, body: `two ${req.url.pathname}` }) },
        {
          prefix: "/_three",
          enabled: () => enabled,
          handle: async (req) => ({ status: 200, body: `three ${req.url.pathname}` }),
        },
      ],
    });
    try {
      const text = async (path: string) => (await fetch(`${host.baseUrl}${path}`)).text();
      // Not the built-in's: on to the function routes, where only /api/… is served (routePrefix "api").
      const functions = async (path: string) => {
        const res = await fetch(`${host.baseUrl}${path}`);
        return res.status === 404 && (await res.text()) === "";
      };
      expect(await text("/_one")).toBe("one /_one");
      expect(await text("/_one/a/b")).toBe("one /_one/a/b");
      expect(await functions("/_onex")).toBe(true);
      expect(await text("/_two")).toBe("two /_two");
      expect(await text("/_two/a")).toBe("two /_two/a");
      expect(await functions("/_twox")).toBe(true);
      expect(await functions("/_three/a")).toBe(true);
      enabled = true;
      expect(await text("/_three/a")).toBe("three /_three/a");
      expect(await functions("/_threex")).toBe(true);
    } finally {
      await host.close();
    }
  });
});
