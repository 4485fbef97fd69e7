import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { parseFunctionTimeout } from "../../packages/devhost/src/functionTimeout.js";
import { parseCorsPolicy } from "../../packages/devhost/src/http/cors.js";
import { DevHostError, type LogRecord, startDevHost } from "../../packages/devhost/src/index.js";

// CORS as Core Tools applies it (local.settings.json Host.CORS / CORSCredentials → ASP.NET Core's CORS middleware)
// and host.json functionTimeout, over a real socket.

// Throwaway apps live inside the repository (under the git-ignored .data/) so that they resolve @azure/functions.
const scratch = fileURLToPath(new URL("../../.data/test-apps", import.meta.url));
const created: string[] = [];
afterAll(() => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});

const APP = `
const { app } = require("@azure/functions");
app.http("echo", { methods: ["GET", "POST"], handler: async (req) => ({ body: "echo " + req.method }) });
// Never answers: only the function timeout can end its invocation.
app.http("hang", { methods: ["GET"], handler: () => new Promise(() => {}) });
`;

function appDir(host: object, local?: object): string {
  mkdirSync(scratch, { recursive: true });
  const dir = mkdtempSync(join(scratch, "cors-"));
  created.push(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ main: "index.js" }));
  writeFileSync(join(dir, "index.js"), APP);
  writeFileSync(join(dir, "host.json"), JSON.stringify({ version: "2.0", ...host }));
  if (local) writeFileSync(join(dir, "local.settings.json"), JSON.stringify(local));
  return dir;
}

async function withHost<T>(
  dir: string,
  run: (baseUrl: string, logs: LogRecord[]) => Promise<T>,
  options: Partial<Parameters<typeof startDevHost>[0]> = {},
): Promise<T> {
  const logs: LogRecord[] = [];
  const host = await startDevHost({ appDir: dir, port: 0, logSink: (r) => logs.push(r), ...options });
  try {
    return await run(host.baseUrl, logs);
  } finally {
    await host.close();
  }
}

const preflight = (origin: string, method = "POST", headers = "content-type, x-custom") => ({
  method: "OPTIONS",
  headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers },
});

describe("dev host CORS (Core Tools' Host.CORS)", () => {
  it("adds no CORS headers and routes OPTIONS like any method when CORS is not configured", async () => {
    await withHost(appDir({}), async (base) => {
      const res = await fetch(`${base}/api/echo`, { headers: { origin: "http://localhost:3000" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
      const pre = await fetch(`${base}/api/echo`, preflight("http://localhost:3000"));
      expect(pre.status).toBe(404); // no function accepts OPTIONS
    });
  });

  it("answers a wildcard policy with '*' and a preflight with 204 echoing the method and headers", async () => {
    const dir = appDir({}, { Values: {}, Host: { CORS: "*" } });
    await withHost(dir, async (base, logs) => {
      const res = await fetch(`${base}/api/echo`, { headers: { origin: "http://localhost:3000" } });
      expect(await res.text()).toBe("echo GET");
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("access-control-allow-credentials")).toBeNull();
      const pre = await fetch(`${base}/api/echo`, preflight("http://localhost:3000"));
      expect(pre.status).toBe(204);
      expect(pre.headers.get("access-control-allow-origin")).toBe("*");
      expect(pre.headers.get("access-control-allow-methods")).toBe("POST");
      expect(pre.headers.get("access-control-allow-headers")).toBe("content-type, x-custom");
      // A preflight is the middleware's: no function ran for it.
      expect(logs.filter((r) => r.message.startsWith("Executing")).length).toBe(1);
      // Without an Origin header nothing is added.
      const plain = await fetch(`${base}/api/echo`);
      expect(plain.headers.get("access-control-allow-origin")).toBeNull();
    });
  });

  it("echoes a listed origin with credentials, varies by origin, and leaves other origins without headers", async () => {
    const dir = appDir(
      {},
      { Host: { CORS: "http://localhost:3000,https://App.Example.com/", CORSCredentials: true } },
    );
    await withHost(dir, async (base) => {
      const ok = await fetch(`${base}/api/echo`, { headers: { origin: "https://app.example.com" } });
      expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
      expect(ok.headers.get("access-control-allow-credentials")).toBe("true");
      expect(ok.headers.get("vary")).toBe("Origin");
      const other = await fetch(`${base}/api/echo`, { headers: { origin: "http://evil.test" } });
      expect(other.status).toBe(200);
      expect(other.headers.get("access-control-allow-origin")).toBeNull();
      const pre = await fetch(`${base}/api/echo`, preflight("http://evil.test"));
      expect(pre.status).toBe(204);
      expect(pre.headers.get("access-control-allow-origin")).toBeNull();
      expect(pre.headers.get("access-control-allow-methods")).toBeNull();
      // Errors from routing carry the headers too, so a browser can read the 404.
      const missing = await fetch(`${base}/api/nowhere`, { headers: { origin: "http://localhost:3000" } });
      expect(missing.status).toBe(404);
      expect(missing.headers.get("access-control-allow-origin")).toBe("http://localhost:3000");
    });
  });

  it("refuses a wildcard with credentials and a malformed origin with a clear error", () => {
    expect(() => parseCorsPolicy("*", true)).toThrow(
      /wildcard origin .* cannot be combined with credentials/,
    );
    expect(() => parseCorsPolicy("localhost:3000", false)).toThrow(/'localhost:3000' is not an origin/);
    expect(parseCorsPolicy(" , ", false)).toBeUndefined();
    expect(parseCorsPolicy("http://a.test, http://b.test:8080/", false)).toEqual({
      origins: ["http://a.test", "http://b.test:8080"],
      credentials: false,
    });
  });
});

describe("dev host functionTimeout (host.json)", () => {
  it("parses TimeSpans and -1, defaults to 30 minutes and refuses the rest", () => {
    expect(parseFunctionTimeout(undefined)).toBe(30 * 60_000);
    expect(parseFunctionTimeout("00:05:00")).toBe(300_000);
    expect(parseFunctionTimeout("1.00:00:00")).toBe(86_400_000);
    expect(parseFunctionTimeout("-1")).toBeNull();
    for (const bad of ["5m", "00:00:00.500", "", 300, "25:00:00"]) {
      expect(() => parseFunctionTimeout(bad), String(bad)).toThrow(DevHostError);
    }
  });

  it("fails an HTTP invocation that outlives the timeout — not a moment before — with the host's lines and an empty 500", async () => {
    const dir = appDir({ functionTimeout: "00:00:01" });
    // The timeout runs on a fake clock: time moves only when the test says, so "not before 1 s" is exact.
    const clock = new FakeClock();
    await withHost(
      dir,
      async (base, logs) => {
        const fast = await fetch(`${base}/api/echo`);
        expect(await fast.text()).toBe("echo GET"); // its timeout was cancelled, not left pending
        expect(clock.pendingTimers).toBe(0);
        let answered = false;
        const request = fetch(`${base}/api/hang`).then((res) => {
          answered = true;
          return res;
        });
        await waitUntil("the invocation to start", () =>
          logs.some((r) => r.message.startsWith("Executing 'Functions.hang'")),
        );
        await clock.advance(999);
        expect(answered).toBe(false);
        expect(logs.some((r) => r.message.startsWith("Timeout value"))).toBe(false);
        await clock.advance(1);
        const res = await request;
        expect(res.status).toBe(500);
        expect(await res.text()).toBe("");
        const messages = logs.map((r) => r.message);
        const id = logs.find((r) => r.message.startsWith("Timeout value of 00:00:01 exceeded"))?.invocationId;
        expect(id).toBeDefined();
        expect(messages).toContain(
          `Timeout value of 00:00:01 exceeded by function 'Functions.hang' (Id: '${id}'). Initiating cancellation.`,
        );
        expect(messages.some((m) => m.startsWith(`Executed 'Functions.hang' (Failed, Id=${id}`))).toBe(true);
        expect(
          messages.some((m) =>
            m.includes("Timeout value of 00:00:01 was exceeded by function: Functions.hang."),
          ),
        ).toBe(true);
      },
      { clock },
    );
  });

  it("refuses to start on an invalid functionTimeout", async () => {
    const dir = appDir({ functionTimeout: "five minutes" });
    await expect(startDevHost({ appDir: dir, port: 0, logSink: () => {} })).rejects.toThrow(
      /host.json functionTimeout "five minutes" is not valid/,
    );
  });
});
