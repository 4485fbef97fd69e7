/**
 * callHttp's built-in activity (BuiltIn::HttpActivity) against a loopback node:http server: what the request carries
 * (method, headers, content, a managed identity's bearer token), any status returned as a response (500 too, as the
 * extension), a timeout and a response over the payload limit failing the task with the reason, and a token source
 * without a credential failing it with what to configure.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type DurableHttpResponseWire,
  runDurableHttpRequest,
  tokenScope,
} from "../../packages/devhost/src/durable/http-activity.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}
const seen: Seen[] = [];
let server: Server;
let base: string;
const hung = new Set<ServerResponse>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      if (req.url === "/ok") {
        res.setHeader("x-one", "1");
        res.setHeader("set-cookie", ["a=1", "b=2"]);
        res.end(JSON.stringify({ hello: "world" }));
      } else if (req.url === "/moved") {
        res.writeHead(302, { Location: "/ok" });
        res.end();
      } else if (req.url === "/boom") {
        res.statusCode = 500;
        res.end("it broke");
      } else if (req.url === "/hang") {
        hung.add(res);
      } else if (req.url === "/large") {
        res.end("z".repeat(5_000));
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of hung) res.destroy();
  await new Promise((r) => server.close(r));
});

const options = { timeoutMs: 2_000, maxPayloadBytes: 4_096 };
const request = (r: Record<string, unknown>) => JSON.stringify(r);

function responseOf(outcome: Awaited<ReturnType<typeof runDurableHttpRequest>>): DurableHttpResponseWire {
  if (!("result" in outcome)) throw new Error(`expected a response, got ${JSON.stringify(outcome)}`);
  return JSON.parse(outcome.result) as DurableHttpResponseWire;
}

describe("BuiltIn::HttpActivity", () => {
  it("sends method, headers and content; returns status, headers (one value a string, several an array) and content", async () => {
    const outcome = await runDurableHttpRequest(
      request({
        method: "POST",
        uri: `${base}/ok`,
        headers: { "Content-Type": "application/json", "x-trace": "t1" },
        content: '{"n":1}',
        asynchronousPatternEnabled: true,
      }),
      options,
    );
    const res = responseOf(outcome);
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.content)).toEqual({ hello: "world" });
    expect(res.headers["x-one"]).toBe("1");
    expect(res.headers["set-cookie"]).toEqual(["a=1", "b=2"]);
    const last = seen.at(-1) as Seen;
    expect(last).toMatchObject({ method: "POST", url: "/ok", body: '{"n":1}' });
    expect(last.headers["content-type"]).toBe("application/json");
    expect(last.headers["x-trace"]).toBe("t1");
  });

  it("sends content without a type as text/plain, as the extension", async () => {
    await runDurableHttpRequest(request({ method: "PUT", uri: `${base}/ok`, content: "plain" }), options);
    expect(seen.at(-1)?.headers["content-type"]).toBe("text/plain");
  });

  it("follows a redirect, as the extension's HttpClient", async () => {
    const res = responseOf(
      await runDurableHttpRequest(request({ method: "GET", uri: `${base}/moved` }), options),
    );
    expect(res.statusCode).toBe(200);
    expect(seen.slice(-2).map((s) => s.url)).toEqual(["/moved", "/ok"]);
  });

  it("returns a 500 as a response, not a failure", async () => {
    const res = responseOf(
      await runDurableHttpRequest(request({ method: "GET", uri: `${base}/boom` }), options),
    );
    expect(res).toMatchObject({ statusCode: 500, content: "it broke" });
  });

  it("fails the task when no complete response comes within the timeout, naming the setting", async () => {
    const outcome = await runDurableHttpRequest(request({ method: "GET", uri: `${base}/hang` }), {
      ...options,
      timeoutMs: 300,
    });
    expect(outcome).toMatchObject({ failure: { ErrorType: "TimeoutException" } });
    expect(JSON.stringify(outcome)).toContain("DURABLE_HTTP_TIMEOUT_MS");
  });

  it("fails the task when the response is over the payload limit, naming the limit", async () => {
    const outcome = await runDurableHttpRequest(request({ method: "GET", uri: `${base}/large` }), options);
    expect(outcome).toMatchObject({ failure: { ErrorType: "PayloadTooLarge" } });
    expect(JSON.stringify(outcome)).toMatch(/DURABLE_MAX_PAYLOAD_BYTES \(4096\)/);
  });

  it("fails the task when the server refuses the connection", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const outcome = await runDurableHttpRequest(request({ uri: `http://127.0.0.1:${port}/x` }), options);
    expect(outcome).toMatchObject({ failure: { ErrorType: "HttpRequestException" } });
  });

  it("sends a managed identity token source's token as a bearer token, for the resource's .default scope", async () => {
    const scopes: string[] = [];
    const outcome = await runDurableHttpRequest(
      request({
        method: "GET",
        uri: `${base}/ok`,
        tokenSource: { kind: "AzureManagedIdentity", resource: "https://management.core.windows.net" },
      }),
      {
        ...options,
        getToken: async (scope) => {
          scopes.push(scope);
          return "token-1";
        },
      },
    );
    expect(responseOf(outcome).statusCode).toBe(200);
    expect(scopes).toEqual(["https://management.core.windows.net/.default"]);
    expect(seen.at(-1)?.headers.authorization).toBe("Bearer token-1");
  });

  it("fails the task, naming the resource and what to configure, when no credential is available", async () => {
    const before = seen.length;
    const outcome = await runDurableHttpRequest(
      request({
        uri: `${base}/ok`,
        tokenSource: { kind: "AzureManagedIdentity", resource: "https://vault.azure.net" },
      }),
      {
        ...options,
        getToken: async () => {
          throw new Error("DefaultAzureCredential failed to retrieve a token from the included credentials.");
        },
      },
    );
    expect(outcome).toMatchObject({ failure: { ErrorType: "CredentialUnavailableError" } });
    const message = "failure" in outcome ? outcome.failure.ErrorMessage : "";
    expect(message).toContain("'https://vault.azure.net'");
    expect(message).toContain("az login");
    expect(seen.length).toBe(before);
  });

  it("maps resources to scopes", () => {
    expect(tokenScope("https://graph.microsoft.com/")).toBe("https://graph.microsoft.com/.default");
    expect(tokenScope("api://x/.default")).toBe("api://x/.default");
  });
});
