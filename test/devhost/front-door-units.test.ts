import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readAppConfig } from "../../packages/devhost/src/appConfig.js";
import {
  createDurableRuntime,
  DURABLE_API_BODY_SLACK_BYTES,
} from "../../packages/devhost/src/durable/runtime.js";
import { parseCorsPolicy } from "../../packages/devhost/src/http/cors.js";
import { crossSiteRefusal } from "../../packages/devhost/src/http/crossSite.js";
import { DEV_HTTP_SETTINGS, readDevHttpSettings } from "../../packages/devhost/src/http/settings.js";
import { ConnectionTurns, RequestThrottle } from "../../packages/devhost/src/http/throttle.js";
import { checkHost, parseAllowedHosts, withBindName } from "../../packages/emulator/src/hosts.js";

// The front door's parts on their own: exact counts and tables, no sockets (front-door-*.test.ts has those).

const tick = () => new Promise((r) => setImmediate(r));

describe("ConnectionTurns", () => {
  it("runs maxInFlight requests of a connection at a time, in order, and stops reading it at the backlog", async () => {
    // node:http's fields as a stand-in: `_paused` (its own flood guard's flag) and the parser.
    const parser = {
      resumes: 0,
      pause() {},
      resume() {
        this.resumes++;
      },
    };
    const socket = {
      _paused: false,
      parser,
      pauses: 0,
      resumes: 0,
      pause() {
        this.pauses++;
      },
      resume() {
        this.resumes++;
      },
    };
    const turns = new ConnectionTurns(1, 4);
    const started: number[] = [];
    const releases: (() => void)[] = [];
    for (let i = 0; i < 7; i++) {
      void turns.enter(socket).then((release) => {
        started.push(i);
        releases[i] = release;
      });
    }
    await tick();
    expect(started).toEqual([0]);
    expect(turns.load(socket)).toEqual({ running: 1, waiting: 6, paused: true });
    expect([socket._paused, socket.pauses]).toEqual([true, 1]); // once, at the 4th waiting request
    // node:http resumes reading on each answer written (socketOnDrain): the turn sets the pause again.
    socket._paused = false;
    releases[0]();
    releases[0](); // twice is once
    await tick();
    expect(started).toEqual([0, 1]);
    expect([socket._paused, socket.pauses, socket.resumes]).toEqual([true, 2, 0]); // 5 waiting: still held
    releases[1]();
    await tick();
    releases[2]();
    await tick();
    expect([socket._paused, socket.pauses]).toEqual([true, 4]); // 3 waiting
    releases[3]();
    await tick();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(turns.load(socket)).toEqual({ running: 1, waiting: 2, paused: false }); // halved: read again
    expect([socket._paused, socket.resumes, parser.resumes]).toEqual([false, 1, 1]);
    for (const i of [4, 5, 6]) {
      releases[i]();
      await tick();
    }
    expect(turns.load(socket)).toEqual({ running: 0, waiting: 0, paused: false });
    expect([socket.pauses, socket.resumes]).toEqual([4, 1]);
  });

  it("keeps connections apart", async () => {
    const a = { pause() {}, resume() {} };
    const b = { pause() {}, resume() {} };
    const turns = new ConnectionTurns(2, 10);
    await turns.enter(a);
    await turns.enter(a);
    await turns.enter(b);
    expect(turns.load(a)).toEqual({ running: 2, waiting: 0, paused: false });
    expect(turns.load(b)).toEqual({ running: 1, waiting: 0, paused: false });
  });
});

describe("RequestThrottle", () => {
  it("runs maxConcurrent, queues up to maxOutstanding in all, refuses the next, and hands slots on in order", async () => {
    const throttle = new RequestThrottle(2, 4);
    const entries = Array.from({ length: 5 }, () => throttle.tryEnter());
    expect(entries.map((e) => e !== undefined)).toEqual([true, true, true, true, false]);
    expect([throttle.running, throttle.waiting]).toEqual([2, 2]);
    const order: number[] = [];
    const [first] = await Promise.all(entries.slice(0, 2) as Promise<() => void>[]);
    void entries[2]?.then(() => order.push(2));
    void entries[3]?.then(() => order.push(3));
    first();
    first(); // twice is once
    await tick();
    expect(order).toEqual([2]);
    expect([throttle.running, throttle.waiting]).toEqual([2, 1]);
    expect(throttle.tryEnter()).toBeDefined(); // room again: 2 running + 1 waiting < 4
  });

  it("Infinity is unbounded", () => {
    const throttle = new RequestThrottle(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);
    for (let i = 0; i < 10_000; i++) expect(throttle.tryEnter()).toBeDefined();
    expect(throttle.running).toBe(10_000);
  });
});

describe("Host names", () => {
  it("parses the list: names, '*.domain', IP addresses, '*'; refuses ports and junk with the entry", () => {
    const list = parseAllowedHosts("a.test;*.b.test, 10.0.0.5 [fe80::1]  ::2");
    expect([...list.names]).toEqual(["a.test", "10.0.0.5", "[fe80::1]", "[::2]"]);
    expect(list.suffixes).toEqual([".b.test"]);
    expect(parseAllowedHosts("*").any).toBe(true);
    for (const bad of ["a.test:80", "[::1]:80", "http://a.test", "a/b", "a@b"]) {
      expect(() => parseAllowedHosts(bad, "Host.AllowedHosts"), bad).toThrow(
        `Host.AllowedHosts: '${bad}' is not a host name`,
      );
    }
  });

  it("answers loopback and listed names; 421 for others, 400 for what is not a host", () => {
    const list = parseAllowedHosts("a.test,*.b.test");
    const status = (h: string | undefined) => checkHost(h, list)?.status ?? 200;
    for (const h of [
      undefined,
      "localhost",
      "x.localhost:1",
      "127.0.0.1",
      "127.255.0.1:9",
      "[::1]",
      "[0:0::1]:2",
    ])
      expect(status(h), h).toBe(200);
    for (const h of ["a.test", "A.TEST:8080", "b.test", "c.b.test"]) expect(status(h), h).toBe(200);
    for (const h of ["evil.test", "localhost.evil.test", "xb.test", "128.0.0.1", "[::2]", "0.0.0.0"])
      expect(status(h), h).toBe(421);
    for (const h of ["", "a b", "u@localhost", "localhost/x", "localhost:99999999"])
      expect(status(h), h).toBe(400);
  });

  it("adds a bind name that is not loopback, and only then", () => {
    const list = parseAllowedHosts(undefined);
    expect(withBindName(list, "127.0.0.1")).toBe(list);
    expect(withBindName(list, "localhost")).toBe(list);
    expect([...withBindName(list, "0.0.0.0").names]).toEqual(["0.0.0.0"]);
    expect([...withBindName(list, "::").names]).toEqual(["[::]"]);
    expect(checkHost("[::]:7071", withBindName(list, "::"))).toBeUndefined();
  });
});

describe("crossSiteRefusal", () => {
  const list = parseAllowedHosts("tunnel.test");
  const refused = (method: string, headers: Record<string, string>) =>
    crossSiteRefusal(method, { host: "127.0.0.1:7071", ...headers }, list) !== undefined;

  it("leaves reads alone and refuses forged writes", () => {
    const evil = { origin: "http://evil.test", "sec-fetch-site": "cross-site", "content-type": "text/plain" };
    for (const m of ["GET", "HEAD", "OPTIONS", "get"]) expect(refused(m, evil), m).toBe(false);
    for (const m of ["POST", "PUT", "PATCH", "DELETE", "PROPFIND"]) expect(refused(m, evil), m).toBe(true);
  });

  it("same origin means the request's own Host, default ports included", () => {
    expect(refused("POST", { origin: "http://127.0.0.1:7071" })).toBe(false);
    expect(refused("POST", { origin: "http://127.0.0.1:7072" })).toBe(true);
    expect(refused("POST", { origin: "http://127.0.0.1:7071/path" })).toBe(true);
    expect(
      crossSiteRefusal("POST", { host: "localhost", origin: "http://localhost:80" }, list),
    ).toBeUndefined();
    expect(refused("POST", { origin: "https://tunnel.test" })).toBe(false);
    expect(refused("POST", { origin: "ftp://127.0.0.1:7071" })).toBe(true);
  });

  it("trusts an origin the CORS policy lists by name, not a wildcard policy", () => {
    const headers = {
      host: "127.0.0.1:7071",
      origin: "http://localhost:3000",
      "sec-fetch-site": "same-site",
    };
    const listed = parseCorsPolicy("http://localhost:3000", false);
    expect(crossSiteRefusal("POST", headers, list, listed)).toBeUndefined();
    expect(crossSiteRefusal("POST", headers, list, parseCorsPolicy("*", false))).toMatch(/same-site/);
    expect(crossSiteRefusal("POST", { ...headers, origin: "http://localhost:3001" }, list, listed)).toMatch(
      /same-site/,
    );
  });

  it("refuses form content types without an Origin, whatever their parameters and case", () => {
    for (const t of [
      "text/plain",
      "Text/Plain; charset=utf-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=z",
    ])
      expect(refused("POST", { "content-type": t }), t).toBe(true);
    for (const t of [
      "application/json",
      "application/json; charset=utf-8",
      "application/octet-stream",
      "text/html",
    ])
      expect(refused("POST", { "content-type": t }), t).toBe(false);
  });
});

describe("settings", () => {
  it("defaults, host.json's throttle values, app settings over host.json, -1 for unbounded", () => {
    const defaults = readDevHttpSettings({});
    expect(defaults.maxRequestBodyBytes).toBe(104_857_600);
    expect(defaults.maxConcurrentRequests).toBe(DEV_HTTP_SETTINGS.maxConcurrentRequests.default);
    const fromHostJson = readDevHttpSettings({}, { maxConcurrentRequests: 7, maxOutstandingRequests: -1 });
    expect([fromHostJson.maxConcurrentRequests, fromHostJson.maxOutstandingRequests]).toEqual([
      7,
      Number.POSITIVE_INFINITY,
    ]);
    const overridden = readDevHttpSettings(
      {
        AzureFunctionsJobHost__extensions__http__maxConcurrentRequests: "-1",
        AzureFunctionsJobHost__extensions__http__maxOutstandingRequests: "9",
        FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: "5",
      },
      { maxConcurrentRequests: 7, maxOutstandingRequests: -1 },
    );
    expect([overridden.maxConcurrentRequests, overridden.maxOutstandingRequests]).toEqual([
      Number.POSITIVE_INFINITY,
      9,
    ]);
    expect(overridden.maxRequestBodyBytes).toBe(5);
    expect(() => readDevHttpSettings({ FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: "100MB" })).toThrow(
      /FUNCTIONS_REQUEST_BODY_SIZE_LIMIT must be a whole number of bytes .* got '100MB'/,
    );
  });

  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  it("host.json's throttle values are whole numbers of at least 1, or -1; local.settings.json Host.AllowedHosts is read", () => {
    const dir = mkdtempSync(join(tmpdir(), "front-door-config-"));
    dirs.push(dir);
    writeFileSync(join(dir, "package.json"), "{}");
    writeFileSync(join(dir, "local.settings.json"), JSON.stringify({ Host: { AllowedHosts: "a.test" } }));
    const write = (http: object) =>
      writeFileSync(join(dir, "host.json"), JSON.stringify({ version: "2.0", extensions: { http } }));
    write({ maxConcurrentRequests: 3, maxOutstandingRequests: -1 });
    expect(readAppConfig(dir).httpThrottle).toEqual({ maxConcurrentRequests: 3, maxOutstandingRequests: -1 });
    expect(readAppConfig(dir).allowedHosts).toBe("a.test");
    for (const bad of [0, -2, 1.5, "10"]) {
      write({ maxConcurrentRequests: bad });
      expect(() => readAppConfig(dir), String(bad)).toThrow(
        /host.json extensions.http.maxConcurrentRequests must be/,
      );
    }
  });

  it("the durable HTTP API takes one payload (DURABLE_MAX_PAYLOAD_BYTES) plus room for its envelope", () => {
    const runtime = createDurableRuntime({
      env: { DURABLE_MAX_PAYLOAD_BYTES: "2048" },
      extensions: () => ({}),
      location: () => Promise.reject(new Error("not started")),
    });
    expect(runtime.routes.maxBodyBytes?.()).toBe(2048 + DURABLE_API_BODY_SLACK_BYTES);
    expect(runtime.routes.maxBodyName).toMatch(/durable HTTP API \(DURABLE_MAX_PAYLOAD_BYTES/);
  });
});
