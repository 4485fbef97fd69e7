/**
 * The postdeploy hook's checks (scripts/hooks/deploy-check.mjs), on real sockets: against the app on the dev host —
 * which, like Core Tools, answers without any token, so the hook must say exactly that and fail — and against a
 * server that answers as App Service Authentication does (401 without a token, the health probe excluded), where
 * every check passes. Then the hook itself (postdeploy.mjs) as azd runs it, a child process with azd's variables;
 * only the Azure CLI, which lists the functions from Azure Resource Manager, is a stand-in (a script on PATH), since
 * no Azure is reachable here.
 */
import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAppFolder, FAST_APP_SETTINGS, repoRoot } from "../../../bench/lib/app-child.js";
import {
  POSTDEPLOY_SETTINGS,
  PROBE_ROUTE,
  readPostdeploySettings,
  runDeployChecks,
} from "../../../scripts/hooks/deploy-check.mjs";
import { type InProcessDevHost, startInProcessDevHost } from "../../support/dev-host.js";

const expected = (
  JSON.parse(readFileSync(join(repoRoot, "scripts", "hooks", "expected-functions.json"), "utf8")) as {
    functions: { name: string; trigger: string }[];
  }
).functions.map((f) => f.name);

let work: string;
let devHost: InProcessDevHost;
let guarded: Server;
let guardedUrl: string;
const guardedRequests: string[] = [];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "postdeploy-"));
  await buildAppFolder(join(work, "app"));
  const env: Record<string, string> = { ...FAST_APP_SETTINGS };
  devHost = await startInProcessDevHost({
    appDir: join(work, "app"),
    dataDirPrefix: "postdeploy-",
    containers: join(repoRoot, "src", "shared", "containers.json"),
    env,
  });
  // What App Service Authentication answers in front of the app: 401 without a token, but for the excluded path.
  guarded = createServer((req, res) => {
    guardedRequests.push(`${req.method} ${req.url}`);
    req.resume();
    if (req.url === "/api/health") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"healthy"}');
    } else res.writeHead(401).end();
  });
  await new Promise<void>((resolve) => guarded.listen(0, "127.0.0.1", resolve));
  guardedUrl = `http://127.0.0.1:${(guarded.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await devHost?.stop();
  await new Promise((resolve) => guarded?.close(resolve));
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the checks, against real servers", () => {
  it("the dev host (no authentication): the 401 check fails and says so; health and the function list pass", async () => {
    const host = devHost.started.host;
    const results = await runDeployChecks({
      baseUrl: host.baseUrl,
      expectedFunctions: expected,
      listFunctions: async () => host.app.functions.map((f) => f.metadata.name),
      attempts: 1,
    });
    expect(results.map((r) => [r.name, r.ok, r.line])).toEqual([
      [
        "auth",
        false,
        `FAIL PUT ${PROBE_ROUTE} without a token answered 400 (expected 401): the route is not behind Microsoft Entra ID`,
      ],
      ["health", true, "ok   GET /api/health answered 200 (healthy)"],
      ["functions", true, `ok   the function app lists all ${expected.length} expected functions`],
    ]);
    // The probe's body is refused by the function: nothing was created.
    expect((await fetch(`${host.baseUrl}${PROBE_ROUTE}`)).status).toBe(404);
  });

  it("behind App Service Authentication: every check passes, each with one request", async () => {
    guardedRequests.length = 0;
    const results = await runDeployChecks({
      baseUrl: `${guardedUrl}/`,
      expectedFunctions: expected,
      listFunctions: async () => expected.map((n) => `func-x/${n}`),
      attempts: 3,
    });
    expect(results.map((r) => r.ok)).toEqual([true, true, true]);
    expect(results[0]?.line).toBe(`ok   PUT ${PROBE_ROUTE} without a token answered 401`);
    expect(guardedRequests).toEqual([`PUT ${PROBE_ROUTE}`, "GET /api/health"]);
  });

  it("a function missing from the list is retried, then named; an unreachable app is 'no answer'", async () => {
    let listed = 0;
    const waits: number[] = [];
    const results = await runDeployChecks({
      baseUrl: guardedUrl,
      expectedFunctions: expected,
      listFunctions: async () => {
        listed++;
        return expected.filter((n) => n !== "reactToResources");
      },
      attempts: 2,
      retryIntervalMs: 1234,
      wait: async (ms) => {
        waits.push(ms);
      },
    });
    expect(results[2]).toEqual({
      name: "functions",
      ok: false,
      line: `FAIL the function app lists ${expected.length - 1} functions; missing 1 of ${expected.length}: reactToResources`,
    });
    expect(listed).toBe(2);
    expect(waits).toEqual([1234]);

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const down = await runDeployChecks({
      baseUrl: `http://127.0.0.1:${port}`,
      expectedFunctions: expected,
      listFunctions: async () => expected,
      attempts: 1,
    });
    expect(down.map((r) => r.line.slice(0, 60))).toEqual([
      `FAIL PUT ${PROBE_ROUTE} without a token no answer (ECONNREFUSED)`.slice(0, 60),
      "FAIL GET /api/health no answer (ECONNREFUSED)",
      `ok   the function app lists all ${expected.length} expected functions`.slice(0, 60),
    ]);
  });

  it("the knobs: defaults, an override, and a bad value refused by name", () => {
    expect(readPostdeploySettings({})).toEqual({
      attempts: POSTDEPLOY_SETTINGS.attempts.default,
      retryIntervalMs: POSTDEPLOY_SETTINGS.retryIntervalMs.default,
    });
    expect(readPostdeploySettings({ POSTDEPLOY_ATTEMPTS: "3" }).attempts).toBe(3);
    expect(() => readPostdeploySettings({ POSTDEPLOY_ATTEMPTS: "abc" })).toThrow(
      "POSTDEPLOY_ATTEMPTS must be a whole number of attempts from 1 to 100; got 'abc'.",
    );
  });
});

describe("postdeploy.mjs, as azd runs it", () => {
  const hook = join(repoRoot, "scripts", "hooks", "postdeploy.mjs");
  const run = (env: Record<string, string>) =>
    promisify(execFile)(process.execPath, [hook], { cwd: repoRoot, env }).then(
      ({ stdout, stderr }) => ({ code: 0, out: stdout + stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
    );

  /** A stand-in `az` on PATH that records its arguments and prints the given function names as ARM does. */
  function fakeAz(names: string[]): { path: string; args: () => string } {
    const dir = mkdtempSync(join(work, "az-"));
    const list = JSON.stringify(names.map((n) => `func-x/${n}`));
    writeFileSync(join(dir, "az"), `#!/bin/sh\necho "$@" > "${dir}/args"\necho '${list}'\n`);
    chmodSync(join(dir, "az"), 0o755);
    return {
      path: `${dir}${delimiter}${process.env.PATH}`,
      args: () => readFileSync(join(dir, "args"), "utf8").trim(),
    };
  }

  it("one line per check and exit 0 when the deployment answers as expected", async () => {
    const az = fakeAz(expected);
    const { code, out } = await run({
      PATH: az.path,
      API_URL: guardedUrl,
      AZURE_RESOURCE_GROUP: "rg-ci",
      AZURE_FUNCTION_APP_NAME: "func-x",
      POSTDEPLOY_ATTEMPTS: "1",
    });
    expect(code, out).toBe(0);
    expect(out.trim().split("\n")).toEqual([
      `postdeploy: checking ${guardedUrl} (func-x)`,
      `postdeploy: ok   PUT ${PROBE_ROUTE} without a token answered 401`,
      "postdeploy: ok   GET /api/health answered 200 (healthy)",
      `postdeploy: ok   the function app lists all ${expected.length} expected functions`,
      "postdeploy: the deployment answers as expected",
    ]);
    expect(az.args()).toBe("functionapp function list -g rg-ci -n func-x --query [].name -o json");
  });

  it("exit 1 — which fails `azd deploy` — when a check fails, when azd's variables are missing, or a knob is bad", async () => {
    const open = await run({
      PATH: fakeAz(expected).path,
      API_URL: devHost.started.host.baseUrl,
      AZURE_RESOURCE_GROUP: "rg-ci",
      AZURE_FUNCTION_APP_NAME: "func-x",
      POSTDEPLOY_ATTEMPTS: "1",
    });
    expect(open.code).toBe(1);
    expect(open.out).toContain("postdeploy: FAIL PUT");
    expect(open.out).toContain(
      'postdeploy: the deployment is not as expected (above); see docs/deploy.md, "Proof after deploy".',
    );

    // No Azure CLI: said once, not retried (the other two checks pass).
    const noAz = await run({
      PATH: join(work, "empty-path"),
      API_URL: guardedUrl,
      AZURE_RESOURCE_GROUP: "rg-ci",
      AZURE_FUNCTION_APP_NAME: "func-x",
      POSTDEPLOY_ATTEMPTS: "5",
      POSTDEPLOY_RETRY_INTERVAL_MS: "600000",
    });
    expect(noAz.code).toBe(1);
    expect(noAz.out).toContain(
      "postdeploy: FAIL the function app could not be listed: the Azure CLI ('az') is not on PATH: install it and `az login`\n",
    );

    const missing = await run({ PATH: process.env.PATH ?? "" });
    expect(missing).toEqual({
      code: 1,
      out: "postdeploy: API_URL, AZURE_RESOURCE_GROUP and AZURE_FUNCTION_APP_NAME must be set (azd sets them from main.bicep's outputs).\n",
    });
    const bad = await run({
      PATH: process.env.PATH ?? "",
      API_URL: guardedUrl,
      AZURE_RESOURCE_GROUP: "rg-ci",
      AZURE_FUNCTION_APP_NAME: "func-x",
      POSTDEPLOY_RETRY_INTERVAL_MS: "-5",
    });
    expect(bad.code).toBe(1);
    expect(bad.out).toContain(
      "POSTDEPLOY_RETRY_INTERVAL_MS must be a whole number of ms from 0 to 600000; got '-5'.",
    );
  });
});
