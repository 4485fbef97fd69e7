import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningDevHost, startDevHost } from "../../packages/devhost/src/index.js";

// Streaming switches the library into proxy mode for the whole process, hence a test file of its own.
const scratch = fileURLToPath(new URL("../../.data/test-apps", import.meta.url));
const created: string[] = [];
afterAll(() => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});
let host: RunningDevHost;
const logs: string[] = [];
/** Larger than what loopback sockets buffer, so most of the body is still on its way when the invocation ends. */
const BIG_MIB = 32;

beforeAll(async () => {
  mkdirSync(scratch, { recursive: true });
  const dir = mkdtempSync(join(scratch, "stream-"));
  created.push(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ main: "index.js" }));
  writeFileSync(
    join(dir, "index.js"),
    `const { app } = require("@azure/functions");
const { Readable } = require("node:stream");
app.setup({ enableHttpStream: true });
app.post("upper", { route: "upper/{id}", handler: async (req) => ({
  status: 202, headers: { "x-id": req.params.id, "x-q": req.query.get("q") ?? "" }, body: (await req.text()).toUpperCase() }) });
app.get("chunks", { handler: () => ({ body: Readable.from(["a", "b", "c"]) }) });
app.get("fails", { handler: () => { throw new Error("stream boom"); } });
app.get("empty", { handler: () => undefined });
const mib = Buffer.alloc(1024 * 1024, 97);
app.get("big", { handler: () => ({ body: Readable.from((function* () { for (let i = 0; i < ${BIG_MIB}; i++) yield mib; })()) }) });`,
  );
  host = await startDevHost({ appDir: dir, port: 0, logSink: (r) => logs.push(r.message) });
});
afterAll(() => host?.close());

describe("HTTP streaming (app.setup({ enableHttpStream: true })) through the library's proxy", () => {
  it("streams request and response bodies with status, headers and route params", async () => {
    expect(host.app.capabilities.HttpUri).toMatch(/^http:\/\/localhost:\d+\/$/);
    const res = await fetch(`${host.baseUrl}/api/upper/42?q=yes`, { method: "POST", body: "streamed body" });
    expect(res.status).toBe(202);
    expect(res.headers.get("x-id")).toBe("42");
    expect(res.headers.get("x-q")).toBe("yes");
    expect(res.headers.get("x-ms-invocation-id")).toBeNull();
    expect(await res.text()).toBe("STREAMED BODY");
    expect(await (await fetch(`${host.baseUrl}/api/chunks`)).text()).toBe("abc");
  });

  it("answers an empty 500 when the handler throws and 204 when it returns nothing, without hanging", async () => {
    const failed = await fetch(`${host.baseUrl}/api/fails`);
    expect(failed.status).toBe(500);
    expect(await failed.text()).toBe("");
    expect((await fetch(`${host.baseUrl}/api/empty`)).status).toBe(204);
  });

  it("delivers a streamed body whole when the client reads it only after the invocation ended", async () => {
    // The handler's result (a Node stream) cannot cross from the worker; the body was cut when the invocation's
    // end was taken for "nothing returned" while the proxy was still sending it (found with the public
    // azure-functions-nodejs-stream sample's 96 MB streamResponse).
    const received = await new Promise<number>((resolve, reject) => {
      const req = request(`${host.baseUrl}/api/big`, (res) => {
        res.pause();
        const waitForEnd = setInterval(() => {
          if (!logs.some((l) => /^Executed 'Functions\.big' \(Succeeded/.test(l))) return;
          clearInterval(waitForEnd);
          let n = 0;
          res.on("data", (c: Buffer) => {
            n += c.length;
          });
          res.once("end", () => resolve(n));
          res.once("error", reject);
          res.resume();
        }, 20);
      });
      req.once("error", reject);
      req.end();
    });
    expect(received).toBe(BIG_MIB * 1024 * 1024);
  });
});
