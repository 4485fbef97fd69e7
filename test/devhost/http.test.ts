import { request as httpRequest } from "node:http";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type LogRecord, type RunningDevHost, startDevHost } from "../../packages/devhost/src/index.js";

const appDir = fileURLToPath(new URL("../fixtures/app-esm", import.meta.url));
const logs: LogRecord[] = [];
let host: RunningDevHost;
const warn = vi.spyOn(console, "warn");

beforeAll(async () => {
  process.env.FIXTURE_OVERRIDDEN = "from-real-environment";
  // A small body cap so that 413 is cheap to provoke (the default is the host's 100 MB).
  host = await startDevHost({ appDir, port: 0, logSink: (r) => logs.push(r), maxRequestBodyBytes: 1024 });
});
afterAll(() => host?.close());

const get = (path: string, init?: RequestInit) => fetch(`${host.baseUrl}${path}`, init);

describe("dev host: an ESM app over a real socket", () => {
  it("registers through @azure/functions-core (no test mode) and lists functions with routes at start", () => {
    expect(warn.mock.calls.flat().join("\n")).not.toMatch(/test mode/);
    const list = logs.find((r) => r.message.startsWith("Functions:"))?.message ?? "";
    expect(list).toContain(`\thello: [GET,POST] ${host.baseUrl}/api/hello`);
    expect(list).toContain(`\tgetItem: [GET] ${host.baseUrl}/api/items/{id:int}`);
    expect(list).toContain("\ttick: timerTrigger");
    expect(host.app.functions.find((f) => f.metadata.name === "tick")?.bindings.timerTrigger).toBeUndefined();
    const tick = host.app.functions.find((f) => f.metadata.name === "tick");
    expect(tick?.trigger.schedule).toBe("%TICK_SCHEDULE%"); // as registered …
    expect(tick?.bindings[tick.triggerName].schedule).toBe("0 */5 * * * *"); // … and resolved
  });

  it("runs appStart hooks before serving and passes settings (real environment wins)", async () => {
    expect(await (await get("/api/started")).json()).toEqual({ appStarted: true });
    expect(await (await get("/api/env")).json()).toEqual({ overridden: "from-real-environment" });
  });

  it("invokes with query, body, params; logs Executing/Executed and context.log levels", async () => {
    const res = await get("/api/hello?name=Ada");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("Hello, Ada");
    expect(await (await get("/api/hello", { method: "POST", body: "Bob" })).text()).toBe("Hello, Bob");
    const executing = logs.filter((r) =>
      /^Executing 'Functions\.hello' \(Reason='This function was programmatically called via the host APIs\.', Id=[0-9a-f-]{36}\)$/.test(
        r.message,
      ),
    );
    expect(executing).toHaveLength(2);
    const id = executing[0].invocationId;
    expect(logs.find((r) => r.invocationId === id && r.message === "hello called with GET")).toMatchObject({
      level: "information",
      category: "Function.hello.User",
    });
    expect(logs.find((r) => r.invocationId === id && r.message === "a warning from hello")?.level).toBe(
      "warning",
    );
    expect(
      logs.some((r) =>
        new RegExp(`^Executed 'Functions.hello' \\(Succeeded, Id=${id}, Duration=\\d+ms\\)$`).test(r.message),
      ),
    ).toBe(true);
  });

  it("routes by constraint, optional and catch-all parameters", async () => {
    expect(await (await get("/api/items/12")).json()).toEqual({ id: 12, by: "int" });
    expect(await (await get("/api/items/abc")).json()).toEqual({ name: "abc", by: "alpha" });
    expect((await get("/api/items/a1")).status).toBe(404);
    expect(await (await get("/api/files/a/b/c.txt")).json()).toEqual({ path: "a/b/c.txt" });
    expect(await (await get("/api/opt")).json()).toEqual({ x: null });
    expect(await (await get("/API/OPT/3")).json()).toEqual({ x: "3" });
  });

  it("answers 404 with an empty body for unknown paths, wrong methods and a missing prefix, like the host", async () => {
    for (const [path, method] of [
      ["/api/nowhere", "GET"],
      ["/api/items/12", "DELETE"],
      ["/hello", "GET"],
    ]) {
      const res = await get(path, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await res.text()).toBe("");
    }
  });

  it("serves every authLevel without keys, as Core Tools does locally", async () => {
    const res = await get("/api/echo/7?a=1&a=2", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ x: 1 }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("x-echo")).toBe("7");
    expect(res.headers.get("set-cookie")).toBe("seen=yes; path=/; httponly");
    expect(await res.json()).toEqual({
      id: "7",
      method: "PUT",
      query: { a: "1,2" },
      contentType: "application/json",
      body: { x: 1 },
    });
    expect((await get("/api/boom")).status).toBe(500); // admin level: reached the handler
  });

  it("turns a throwing handler into an empty 500 logged with its invocation id, and keeps serving", async () => {
    const res = await get("/api/boom");
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("");
    const failed = logs.filter((r) => /^Executed 'Functions.boom' \(Failed, Id=/.test(r.message)).at(-1);
    expect(failed?.level).toBe("error");
    const exception = logs.find(
      (r) =>
        r.invocationId === failed?.invocationId &&
        r.message.startsWith("Exception while executing function: Functions.boom"),
    );
    expect(exception?.message).toContain("Exception: kaboom");
    expect((await get("/api/hello")).status).toBe(200);
  });

  it("runs pre- and post-invocation hooks through the library's invocation model", async () => {
    expect(await (await get("/api/hookSwap")).text()).toBe("swapped by preInvocation");
    const recovered = await get("/api/recover");
    expect(recovered.status).toBe(418);
    expect(await recovered.text()).toBe("recovered by postInvocation");
  });

  it("answers 204 when the handler returns nothing", async () => {
    expect((await get("/api/nothing")).status).toBe(204);
  });

  it("refuses bodies over the limit with 413 (declared or streamed) and URLs over 4096 bytes with 414", async () => {
    expect((await get("/api/hello", { method: "POST", body: "x".repeat(2000) })).status).toBe(413);
    const streamed = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${host.baseUrl}/api/hello`,
        { method: "POST", headers: { "transfer-encoding": "chunked" } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end("y".repeat(3000));
    });
    expect(streamed).toBe(413);
    expect((await get(`/api/hello?q=${"z".repeat(4100)}`)).status).toBe(414);
  });
});
