import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { HttpRequest, InvocationContext } from "@azure/functions";
import * as df from "durable-functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import {
  createDurableApiHandler,
  durableBuiltinRoutes,
} from "../../packages/devhost/src/durable/client-api.js";
import {
  durableClientInputData,
  ensureWebsiteHostname,
} from "../../packages/devhost/src/durable/client-binding.js";
import { parseCorsPolicy } from "../../packages/devhost/src/http/cors.js";
import type { BuiltinRequest } from "../../packages/devhost/src/http/server.js";
import { type LogRecord, type RunningDevHost, startDevHost } from "../../packages/devhost/src/index.js";
import { isStatus, startApiHub } from "../durable/api-hub.js";
import { type FrontDoorApp, frontDoorApp } from "../support/front-door-app.js";
import { type RawAnswer, rawCall } from "../support/raw-http.js";

// The front door's guards over real sockets, with forged headers sent on raw node:net connections: the DNS-rebinding
// guard (every route answers only loopback or listed Host names) and the cross-site guard of built-in routes.

let app: FrontDoorApp;
let host: RunningDevHost;
const logs: LogRecord[] = [];
const reached: BuiltinRequest[] = [];
const ok = async (req: BuiltinRequest) => {
  reached.push(req);
  return { status: 200, headers: { "content-type": "application/json" }, body: '{"done":true}' };
};

beforeAll(async () => {
  app = frontDoorApp({ host: { AllowedHosts: "dev.example.test; *.tunnel.example.test" } });
  host = await startDevHost({
    appDir: app.dir,
    port: 0,
    logSink: (r) => logs.push(r),
    builtinRoutes: [
      { prefix: "/runtime/webhooks/durabletask", handle: ok },
      { prefix: "/_dev", handle: ok },
    ],
  });
});
afterAll(async () => {
  await host?.close();
  app?.remove();
});

const call = (method: string, path: string, headers: Record<string, string>, body?: string) =>
  rawCall(host.port, method, path, headers, body);
const json = (a: RawAnswer) => JSON.parse(a.body) as { code: string; message: string };

describe("the DNS-rebinding guard (every route)", () => {
  const routes = ["/api/echo", "/runtime/webhooks/durabletask/instances", "/_dev/api/state", "/api/nowhere"];

  it("refuses a Host that is neither loopback nor listed with 421 and a JSON reason, on every route", async () => {
    for (const path of routes) {
      for (const forged of [
        "evil.example",
        `evil.example:${host.port}`,
        "192.168.1.20",
        "localhost.evil.example",
      ]) {
        const before = reached.length;
        const answer = await call("GET", path, { host: forged });
        expect(answer.status, `${path} Host ${forged}`).toBe(421);
        expect(answer.headers["content-type"]).toMatch(/^application\/json/);
        expect(json(answer).code).toBe("HostNotAllowed");
        expect(json(answer).message).toContain("Host.AllowedHosts");
        expect(reached.length).toBe(before); // never reached the endpoint
      }
    }
    // A POST that would start work is refused the same way, before its body is looked at.
    const post = await call(
      "POST",
      "/api/echo",
      { host: "evil.example", "content-type": "application/json" },
      "{}",
    );
    expect(post.status).toBe(421);
    // Logged once per name, not once per request.
    const lines = logs.filter((r) => r.message.startsWith("Refused a request for Host 'evil.example'"));
    expect(lines).toHaveLength(1);
  });

  it("refuses a Host header that is not host[:port] with 400", async () => {
    for (const forged of ["localhost@evil.example", "evil.example/x", "[::1", "a b"]) {
      const answer = await call("GET", "/api/echo", { host: forged });
      expect(answer.status, forged).toBe(400);
      expect(json(answer).code).toBe("InvalidHost");
    }
  });

  it("answers loopback names with or without a port, and the names listed in Host.AllowedHosts", async () => {
    for (const name of [
      "localhost",
      `localhost:${host.port}`,
      "LOCALHOST.",
      "app.localhost:1234",
      "127.0.0.1",
      `127.0.0.1:${host.port}`,
      "127.1.2.3",
      "[::1]",
      `[::1]:${host.port}`,
      "dev.example.test",
      "Dev.Example.Test:443",
      "tunnel.example.test",
      "abc-7071.tunnel.example.test",
    ]) {
      const answer = await call("GET", "/api/echo", { host: name });
      expect(answer.status, name).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({ method: "GET", bytes: 0 });
    }
    expect((await call("GET", "/_dev", { host: "dev.example.test" })).status).toBe(200);
    expect((await call("GET", "/api/echo", { host: "other.example.test" })).status).toBe(421);
  });

  it("--allowed-hosts replaces Host.AllowedHosts; a bad entry stops the start with its name", async () => {
    const other = await startDevHost({ appDir: app.dir, port: 0, allowedHosts: "flag.example.test" });
    try {
      expect((await rawCall(other.port, "GET", "/api/echo", { host: "flag.example.test" })).status).toBe(200);
      expect((await rawCall(other.port, "GET", "/api/echo", { host: "dev.example.test" })).status).toBe(421);
    } finally {
      await other.close();
    }
    await expect(
      startDevHost({ appDir: app.dir, port: 0, allowedHosts: "ok.test, bad.test:8080" }),
    ).rejects.toThrow(/--allowed-hosts: 'bad.test:8080' is not a host name/);
  });

  it("'*' turns the guard off", async () => {
    const open = await startDevHost({ appDir: app.dir, port: 0, allowedHosts: "*" });
    try {
      expect((await rawCall(open.port, "GET", "/api/echo", { host: "anything.example" })).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it("bound to a name that is not loopback, the dev host answers that name too", async () => {
    const wide = await startDevHost({ appDir: app.dir, port: 0, hostname: "0.0.0.0" });
    try {
      expect(wide.baseUrl).toBe(`http://0.0.0.0:${wide.port}`);
      expect((await rawCall(wide.port, "GET", "/api/echo", { host: `0.0.0.0:${wide.port}` })).status).toBe(
        200,
      );
      expect((await rawCall(wide.port, "GET", "/api/echo", { host: "evil.example" })).status).toBe(421);
    } finally {
      await wide.close();
    }
  });
});

describe("cosmos-feed start --allowed-hosts (a real child process)", () => {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const start = (args: string[]) => {
    // --emulator-port 0: should anything want the embedded emulator, never on the well-known 8081.
    const cliArgs = [
      "packages/devhost/bin/cosmos-feed.js",
      "start",
      "test/fixtures/app-esm",
      "--emulator-port",
      "0",
      ...args,
    ];
    const child = spawn(process.execPath, cliArgs, {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let text = "";
    child.stdout?.on("data", (c: Buffer) => {
      text += c.toString();
    });
    child.stderr?.on("data", (c: Buffer) => {
      text += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    return { child, exited, output: () => text };
  };

  it("answers the listed name, refuses others, and stops with one line on a bad entry", async () => {
    const run = start(["--port", "0", "--allowed-hosts", "cli.example.test"]);
    try {
      await waitUntil("the functions list", () =>
        /hello: \[GET,POST\] http:\/\/127\.0\.0\.1:\d+/.test(run.output()),
      );
      const port = Number(/http:\/\/127\.0\.0\.1:(\d+)\/api\/hello/.exec(run.output())?.[1]);
      expect((await rawCall(port, "GET", "/api/hello?name=x", { host: "cli.example.test" })).body).toBe(
        "Hello, x",
      );
      expect((await rawCall(port, "GET", "/api/hello", { host: "other.example.test" })).status).toBe(421);
    } finally {
      run.child.kill("SIGTERM");
      await run.exited;
    }
    const bad = start(["--port", "0", "--allowed-hosts", "ok.test,bad.test:80"]);
    expect(await bad.exited).toBe(1);
    expect(bad.output().trim()).toMatch(
      /^cosmos-feed start: --allowed-hosts: 'bad.test:80' is not a host name/,
    );
  });
});

describe("the cross-site guard (built-in routes)", () => {
  const self = () => `http://127.0.0.1:${host.port}`;
  const here = () => ({ host: `127.0.0.1:${host.port}` });
  const endpoints = ["/runtime/webhooks/durabletask/instances/x/terminate", "/_dev/api/state"];

  it("refuses each forgery of a state-changing request with 403 and the reason; the endpoint never sees it", async () => {
    const forgeries: [string, Record<string, string>, RegExp][] = [
      [
        "Origin of another site",
        { origin: "http://evil.example", "content-type": "application/json" },
        /Origin/,
      ],
      [
        "Origin of another port",
        { origin: "http://127.0.0.1:3000", "content-type": "application/json" },
        /Origin/,
      ],
      ["Origin null", { origin: "null", "content-type": "application/json" }, /Origin 'null'/],
      [
        "Sec-Fetch-Site cross-site",
        { "sec-fetch-site": "cross-site", "content-type": "application/json" },
        /cross-site/,
      ],
      [
        "Sec-Fetch-Site same-site",
        { "sec-fetch-site": "same-site", "content-type": "application/json" },
        /same-site/,
      ],
      [
        "text/plain form",
        { "content-type": "text/plain;charset=UTF-8" },
        /text\/plain body without an Origin/,
      ],
      ["urlencoded form", { "content-type": "application/x-www-form-urlencoded" }, /HTML form/],
      ["multipart form", { "content-type": "multipart/form-data; boundary=x" }, /multipart\/form-data/],
    ];
    for (const path of endpoints) {
      for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
        for (const [what, headers, reason] of forgeries) {
          const before = reached.length;
          const answer = await call(method, path, { ...here(), ...headers }, "{}");
          expect(answer.status, `${method} ${path}: ${what}`).toBe(403);
          expect(json(answer).code).toBe("CrossSiteRequest");
          expect(json(answer).message).toMatch(reason);
          expect(reached.length).toBe(before);
        }
      }
    }
  });

  it("DNS rebinding: the attacker's name as Host is refused even with a matching Origin", async () => {
    const answer = await call("POST", endpoints[0], {
      host: `evil.example:${host.port}`,
      origin: `http://evil.example:${host.port}`,
      "sec-fetch-site": "same-origin",
      "content-type": "application/json",
    });
    expect(answer.status).toBe(421);
  });

  it("lets legitimate calls through: JSON without Origin, same-origin pages, a listed name, reads, bodiless POSTs", async () => {
    const legit: [string, string, Record<string, string>][] = [
      ["JSON, no Origin (durable-functions, curl -H)", "POST", { "content-type": "application/json" }],
      ["no content type", "POST", {}],
      ["octet-stream", "PUT", { "content-type": "application/octet-stream" }],
      [
        "same-origin page (text/plain fetch)",
        "POST",
        { origin: self(), "sec-fetch-site": "same-origin", "content-type": "text/plain" },
      ],
      [
        "same-origin, localhost name",
        "DELETE",
        { host: `localhost:${host.port}`, origin: `http://localhost:${host.port}` },
      ],
      [
        "a listed name's origin (a tunnel)",
        "POST",
        { origin: "https://abc.tunnel.example.test", "content-type": "application/json" },
      ],
      [
        "typed into the address bar",
        "POST",
        { "sec-fetch-site": "none", "content-type": "application/json" },
      ],
      ["cross-site read", "GET", { origin: "http://evil.example", "sec-fetch-site": "cross-site" }],
      ["cross-site HEAD", "HEAD", { origin: "http://evil.example", "sec-fetch-site": "cross-site" }],
    ];
    for (const [what, method, headers] of legit) {
      const before = reached.length;
      const answer = await call(
        method,
        endpoints[0],
        { ...here(), ...headers },
        method === "GET" || method === "HEAD" ? undefined : "{}",
      );
      expect(answer.status, what).toBe(200);
      expect(reached.length, what).toBe(before + 1);
    }
    // Another loopback name is another origin: a page on http://localhost:<port> posting to 127.0.0.1:<port>.
    const other = await call("POST", endpoints[1], { ...here(), origin: `http://localhost:${host.port}` });
    expect(other.status).toBe(403);
  });

  it("trusts a page whose origin Host.CORS / --cors lists by name", async () => {
    const corsHost = await startDevHost({
      appDir: app.dir,
      port: 0,
      cors: parseCorsPolicy("http://localhost:3000", false),
      builtinRoutes: [{ prefix: "/runtime/webhooks/durabletask", handle: ok }],
    });
    try {
      const from = (origin: string) =>
        rawCall(corsHost.port, "POST", endpoints[0], {
          host: `localhost:${corsHost.port}`,
          origin,
          "sec-fetch-site": "same-site",
          "content-type": "application/json",
        });
      expect((await from("http://localhost:3000")).status).toBe(200);
      expect((await from("http://localhost:3001")).status).toBe(403);
    } finally {
      await corsHost.close();
    }
  });

  it("does not guard the app's own functions: they are the app's API, as in Azure", async () => {
    const answer = await call(
      "POST",
      "/api/echo",
      {
        ...here(),
        origin: "http://evil.example",
        "sec-fetch-site": "cross-site",
        "content-type": "text/plain",
      },
      "hello",
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ method: "POST", bytes: 5 });
  });
});

describe("the durable-functions client through the front door", () => {
  it("starts, signals, reads and purges instances (JSON calls, no Origin) on the durable HTTP API", async () => {
    // The real task hub on the memory backend, running real orchestrations (test/durable/api-hub.ts).
    const ah = await startApiHub("TestHubName");
    const hub = ah.hub;
    let baseUrl = "";
    const durable = await startDevHost({
      appDir: app.dir,
      port: 0,
      builtinRoutes: [
        durableBuiltinRoutes(
          createDurableApiHandler({ hub, baseUrl: () => baseUrl, isOrchestrator: (n) => n === "hello" }),
        ),
      ],
    });
    baseUrl = durable.baseUrl;
    const savedHostname = process.env.WEBSITE_HOSTNAME;
    delete process.env.WEBSITE_HOSTNAME;
    try {
      ensureWebsiteHostname(process.env, baseUrl);
      const input = df.input.durableClient();
      const context = new InvocationContext({ functionName: "starter", options: { extraInputs: [input] } });
      context.extraInputs.set(input, durableClientInputData({ baseUrl, hubName: "TestHubName" }));
      const client = df.getClient(context);

      ah.hold(); // the instance's first episode waits: Pending until released
      const id = await client.startNew("hello", { input: { who: "Ada" } });
      expect(await client.getStatus(id)).toMatchObject({ runtimeStatus: "Pending", input: { who: "Ada" } });
      ah.release();
      await client.raiseEvent(id, "Approval", { approved: true });
      await client.suspend(id, "wait");
      await ah.until(id, isStatus("Suspended"));
      await client.resume(id, "go");
      await client.terminate(id, "done");
      await ah.until(id, isStatus("Terminated"));
      expect(await client.getStatus(id)).toMatchObject({ runtimeStatus: "Terminated", output: "done" });
      // Each call reached the instance: its history holds them.
      const shown = await hub.getStatus(id, { showHistory: true });
      expect(shown?.historyEvents).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ EventType: "EventRaised", Name: "Approval" }),
          expect.objectContaining({ EventType: "ExecutionSuspended", Reason: "wait" }),
          expect.objectContaining({ EventType: "ExecutionResumed", Reason: "go" }),
          expect.objectContaining({ EventType: "ExecutionTerminated" }),
        ]),
      );
      const status = client.createCheckStatusResponse(
        new HttpRequest({ url: `${baseUrl}/api/start`, method: "POST" }),
        id,
      );
      expect(status.status).toBe(202);
      expect((await client.purgeInstanceHistory(id)).instancesDeleted).toBe(1);
      expect(await hub.getStatus(id)).toBeUndefined();
    } finally {
      if (savedHostname === undefined) delete process.env.WEBSITE_HOSTNAME;
      else process.env.WEBSITE_HOSTNAME = savedHostname;
      await durable.close();
      await ah.close();
    }
  });
});
