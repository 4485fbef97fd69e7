import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { type BuiltinRequest, DevHttpServer } from "../../packages/devhost/src/http/server.js";
import { DEV_HTTP_SETTINGS } from "../../packages/devhost/src/http/settings.js";
import { HostLogger, type LoadedApp } from "../../packages/devhost/src/index.js";
import { frontDoorHosts } from "../support/front-door-app.js";
import {
  exchange,
  openSocket,
  parseAnswers,
  type RawAnswer,
  rawCall,
  rawRequest,
} from "../support/raw-http.js";

// Body limits and bounded work at the front door, over real sockets, judged by exact counts (bytes, answers, how
// many invocations run at once inside the app), never by how long anything took.

const serve = frontDoorHosts({ afterEach, afterAll });

const HOST = { host: "127.0.0.1" };
const body = (a: RawAnswer) => JSON.parse(a.body) as Record<string, unknown>;

/**
 * Sends a chunked body of up to `total` bytes as fast as the connection takes it, reading answers meanwhile. Resolves
 * with the answers, the bytes the client managed to write, and whether the server closed the connection first.
 */
async function flood(port: number, path: string, headers: Record<string, string>, total: number) {
  const socket = await openSocket(port);
  let data = Buffer.alloc(0);
  socket.on("data", (c: Buffer) => {
    data = Buffer.concat([data, c]);
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  let serverClosed = false;
  socket.once("close", () => {
    serverClosed = true;
  });
  socket.on("error", () => {}); // EPIPE / ECONNRESET once the server closes: expected
  socket.write(rawRequest("POST", path, { ...HOST, ...headers, "transfer-encoding": "chunked" }));
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]);
  let written = 0;
  while (written < total && !serverClosed) {
    if (!socket.write(frame)) {
      await Promise.race([new Promise((r) => socket.once("drain", r)), closed]);
    }
    written += chunk.length;
  }
  const finishedSending = !serverClosed;
  if (finishedSending) socket.end("0\r\n\r\n");
  await closed;
  return { answers: parseAnswers(data).answers, written, finishedSending };
}

describe("request body limits", () => {
  it("FUNCTIONS_REQUEST_BODY_SIZE_LIMIT bounds the app's functions, declared or chunked: 413 with code and reason", async () => {
    const host = await serve({ values: { FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: "2048" } });
    const at = await rawCall(host.port, "POST", "/api/echo", HOST, "x".repeat(2048));
    expect(at.status).toBe(200);
    expect(body(at)).toEqual({ method: "POST", bytes: 2048 });
    const over = await rawCall(host.port, "POST", "/api/echo", HOST, "x".repeat(2049));
    expect(over.status).toBe(413);
    expect(body(over).code).toBe("RequestBodyTooLarge");
    expect(body(over).message).toMatch(/2048 bytes.*FUNCTIONS_REQUEST_BODY_SIZE_LIMIT/);
    const chunked = await rawCall(
      host.port,
      "POST",
      "/api/echo",
      { ...HOST, "transfer-encoding": "chunked" },
      `400\r\n${"y".repeat(1024)}\r\n401\r\n${"y".repeat(1025)}\r\n0\r\n\r\n`,
    );
    expect(chunked.status).toBe(413);
    expect(body(chunked).code).toBe("RequestBodyTooLarge");
  });

  it("stops reading a chunked body past the limit: the client cannot push 64 MB through", async () => {
    const host = await serve({ values: { FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: "2048" } });
    // Keep-alive: with `Connection: close` node:http would close the connection after any answer.
    const sent = await flood(host.port, "/api/echo", { connection: "keep-alive" }, 64 * 1024 * 1024);
    expect(sent.answers.map((a) => a.status)).toEqual([413]);
    // The dev host read the limit plus DEV_HTTP_DISCARD_AFTER_REFUSAL_BYTES (256 KiB), then closed the connection:
    // what the client wrote beyond that sits in the kernel's socket buffers, far below the 64 MB it had to send.
    expect(sent.finishedSending).toBe(false);
    expect(sent.written).toBeLessThan(64 * 1024 * 1024);
  });

  it("built-in routes have their own small limit, enforced while reading", async () => {
    const seen: BuiltinRequest[] = [];
    const handle = async (req: BuiltinRequest) => {
      seen.push(req);
      return { status: 200, body: String(req.body.length) };
    };
    const host = await serve(
      { values: { DEV_HTTP_BUILTIN_MAX_BODY_BYTES: "1000" } },
      {
        builtinRoutes: [
          { prefix: "/_own", maxBodyBytes: () => 100, handle },
          { prefix: "/_default", handle },
        ],
      },
    );
    const json = { ...HOST, "content-type": "application/json" };
    expect((await rawCall(host.port, "POST", "/_own/x", json, "a".repeat(100))).body).toBe("100");
    const own = await rawCall(host.port, "POST", "/_own/x", json, "a".repeat(101));
    expect(own.status).toBe(413);
    expect(body(own).message).toMatch(/100 bytes, the limit of \/_own/);
    expect((await rawCall(host.port, "POST", "/_default/x", json, "a".repeat(1000))).body).toBe("1000");
    const fallback = await rawCall(host.port, "POST", "/_default/x", json, "a".repeat(1001));
    expect(fallback.status).toBe(413);
    expect(body(fallback).message).toMatch(/DEV_HTTP_BUILTIN_MAX_BODY_BYTES/);
    expect(seen.map((r) => r.body.length)).toEqual([100, 1000]);

    // The dev host's own limit applies to built-in routes too, when it is the smaller.
    const small = await serve(
      { values: { FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: "50" } },
      { builtinRoutes: [{ prefix: "/_own", maxBodyBytes: () => 100, maxBodyName: "own", handle }] },
    );
    const capped = await rawCall(small.port, "POST", "/_own/x", json, "a".repeat(51));
    expect(body(capped).message).toMatch(
      /50 bytes, the limit of the dev host \(FUNCTIONS_REQUEST_BODY_SIZE_LIMIT\)/,
    );

    const sent = await flood(
      host.port,
      "/_own/x",
      { connection: "keep-alive", "content-type": "application/json" },
      64 * 1024 * 1024,
    );
    expect(sent.answers.map((a) => a.status)).toEqual([413]);
    expect(sent.finishedSending).toBe(false);
    expect(seen).toHaveLength(2);
  });

  it("a refused request (Host, cross-site) is not read to its end either", async () => {
    const host = await serve(
      {},
      { builtinRoutes: [{ prefix: "/_own", handle: async () => ({ status: 200 }) }] },
    );
    const total = 64 * 1024 * 1024;
    const keepAlive = { connection: "keep-alive" };
    const rebinding = await flood(host.port, "/api/echo", { ...keepAlive, host: "evil.example" }, total);
    expect(rebinding.answers.map((a) => a.status)).toEqual([421]);
    expect(rebinding.finishedSending).toBe(false);
    const form = await flood(host.port, "/_own/x", { ...keepAlive, "content-type": "text/plain" }, total);
    expect(form.answers.map((a) => a.status)).toEqual([403]);
    expect(form.finishedSending).toBe(false);
  });
});

describe("bounded work", () => {
  it("20,000 pipelined requests on one keep-alive connection run one at a time, and all are answered in order", async () => {
    // node:http times a request's headers from its first byte, also while the dev host has stopped reading the
    // connection (its turn gate): a request cut by a TCP chunk waits there for half the backlog's answers, which at
    // load 19 took more than the 30 s default (408, the connection closed after 16,978 answers). Kestrel parses
    // a pipelined request only when its turn comes (docs/devhost.md's differences): the test gives node's maximum.
    const host = await serve({ values: { DEV_HTTP_REQUEST_HEADERS_TIMEOUT_MS: "300000" } });
    const count = 20_000;
    const one = rawRequest("GET", "/api/count?key=pipelined", { ...HOST, connection: "keep-alive" });
    const answers = await exchange(host.port, Buffer.concat(Array.from({ length: count }, () => one)), count);
    expect(answers).toHaveLength(count);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const bodies = answers.map(body);
    expect(bodies.map((b) => b.calls)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    // Without the per-connection turn, node:http starts every parsed request at once (thousands together).
    expect(bodies[count - 1].max).toBe(1);
  });

  it("stops reading a connection whose pipelined requests pile up: the server holds a bounded number of them", async () => {
    // The server alone, with one built-in route (no app is invoked: the stand-in app is never reached). Each request
    // notes how many requests the server has received and not yet answered.
    let running = 0;
    let maxRunning = 0;
    const held: number[] = [];
    const server: DevHttpServer = new DevHttpServer({
      app: {} as LoadedApp,
      table: { prefix: "api", routes: [], errors: [] },
      logger: new HostLogger({ sink: () => {} }),
      builtinRoutes: [
        {
          prefix: "/_work",
          handle: async () => {
            running++;
            maxRunning = Math.max(maxRunning, running);
            held.push(server.inFlight);
            await new Promise((r) => setImmediate(r));
            running--;
            return { status: 200, body: "ok" };
          },
        },
      ],
    });
    const port = await server.listen(0, "127.0.0.1");
    try {
      const count = 20_000;
      const one = rawRequest("GET", "/_work", { ...HOST, connection: "keep-alive" });
      const answers = await exchange(port, Buffer.concat(Array.from({ length: count }, () => one)), count);
      expect(answers.filter((a) => a.status === 200 && a.body === "ok")).toHaveLength(count);
      expect(maxRunning).toBe(1);
      // Once DEV_HTTP_PIPELINE_BACKLOG requests wait, the connection is not read until half were served: what is held
      // is that backlog plus what one read of the socket (at most 64 KiB) brought, not the 20,000 the client wrote
      // (without the pause node:http parses nearly all of them ahead while the first ones run).
      const oneRead = Math.ceil(65_536 / one.length);
      expect(Math.max(...held)).toBeLessThanOrEqual(DEV_HTTP_SETTINGS.pipelineBacklog.default + 2 * oneRead);
    } finally {
      await server.close();
    }
  });

  it("maxConcurrentRequests caps invocations over all connections; past maxOutstandingRequests it answers 429", async () => {
    // A server the app's `gate` function calls: it holds every call until the test lets them go, so the number held
    // is exactly the number of invocations running.
    const held: ServerResponse[] = [];
    let open = false;
    let maxHeld = 0;
    const gate = createServer((_, res) => {
      if (open) return void res.end("through");
      held.push(res);
      maxHeld = Math.max(maxHeld, held.length);
    });
    await new Promise<void>((r) => gate.listen(0, "127.0.0.1", r));
    try {
      const host = await serve({
        hostJson: { extensions: { http: { maxConcurrentRequests: 2, maxOutstandingRequests: 5 } } },
        values: { GATE_URL: `http://127.0.0.1:${(gate.address() as AddressInfo).port}/` },
      });
      const answers: RawAnswer[] = [];
      const calls = Array.from({ length: 8 }, () =>
        rawCall(host.port, "GET", "/api/gate", HOST).then((a) => void answers.push(a)),
      );
      await waitUntil("two invocations held at the gate", () => held.length === 2);
      await waitUntil("three answers 429", () => answers.length === 3);
      expect(answers.map((a) => a.status)).toEqual([429, 429, 429]);
      expect(body(answers[0]).code).toBe("TooManyRequests");
      expect(answers[0].headers["retry-after"]).toBe("1");
      expect(held).toHaveLength(2); // the other three wait in the dev host, not in the app
      open = true;
      for (const res of held.splice(0)) res.end("through");
      await Promise.all(calls);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
      expect(answers.filter((a) => a.status === 200).every((a) => a.body === "through")).toBe(true);
      expect(maxHeld).toBe(2);
    } finally {
      gate.closeAllConnections();
      await new Promise((r) => gate.close(r));
    }
  });

  it("pipelined requests on several connections stay within maxConcurrentRequests in total", async () => {
    const host = await serve({
      values: { AzureFunctionsJobHost__extensions__http__maxConcurrentRequests: "3" },
    });
    const perConnection = 300;
    const one = rawRequest("GET", "/api/count?key=total", { ...HOST, connection: "keep-alive" });
    const payload = Buffer.concat(Array.from({ length: perConnection }, () => one));
    const all = await Promise.all(
      Array.from({ length: 8 }, () => exchange(host.port, payload, perConnection)),
    );
    expect(all.flat().filter((a) => a.status === 200)).toHaveLength(8 * perConnection);
    const max = Math.max(...all.flat().map((a) => Number(body(a).max)));
    expect(max).toBeGreaterThan(1); // connections did run side by side …
    expect(max).toBeLessThanOrEqual(3); // … never more than three at once
  });
});
