import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { type LogRecord, type RunningDevHost, startDevHost } from "../../packages/devhost/src/index.js";
import { rawCall } from "../support/raw-http.js";
import { scratchApps } from "../support/scratch-apps.js";

const apps = scratchApps("worker-");
afterAll(() => apps.removeAll());

function appDir(files: Record<string, string>): string {
  return apps.write({
    "package.json": JSON.stringify({ name: "w", type: "module", main: "src/*.js" }),
    "host.json": JSON.stringify({ version: "2.0" }),
    ...files,
  });
}

const APP = `
import { app } from "@azure/functions";
import { readFileSync } from "node:fs";
app.http("pid", { handler: async () => ({ jsonBody: { pid: process.pid } }) });
app.http("env", {
  handler: async () => ({
    jsonBody: {
      cwd: process.cwd(),
      runtime: process.env.FUNCTIONS_WORKER_RUNTIME,
      root: process.env.AzureWebJobsScriptRoot,
      environment: process.env.AZURE_FUNCTIONS_ENVIRONMENT,
      data: readFileSync("data.txt", "utf8"),
      sourceMaps: process.sourceMapsEnabled,
    },
  }),
});
app.http("throwLater", {
  handler: async () => {
    setTimeout(() => { throw new Error("thrown from a timer callback"); }, 0);
    return new Promise(() => {}); // never answers: the crash ends it
  },
});
app.http("rejectLater", {
  handler: async () => {
    Promise.reject(new Error("an unhandled rejection"));
    return new Promise(() => {});
  },
});
app.http("spin", { handler: async () => { for (;;) {} } });
app.http("trace", { handler: async (_req, context) => ({ jsonBody: context.traceContext ?? null }) });
`;

async function withHost(
  dir: string,
  run: (host: RunningDevHost, logs: LogRecord[]) => Promise<void>,
  options: { env?: NodeJS.ProcessEnv; clock?: FakeClock } = {},
): Promise<void> {
  const logs: LogRecord[] = [];
  const host = await startDevHost({
    appDir: dir,
    port: 0,
    logSink: (r) => logs.push(r),
    env: { ...process.env, ...options.env },
    clock: options.clock,
  });
  try {
    await run(host, logs);
  } finally {
    await host.close();
  }
}

const pidOf = async (base: string) =>
  ((await (await fetch(`${base}/api/pid`)).json()) as { pid: number }).pid;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("the app runs in a worker process of its own", () => {
  it("in the app folder, with the host's variables, the app settings and node's options", async () => {
    const dir = appDir({
      "src/index.js": APP,
      "data.txt": "read relative to the app folder",
    });
    await withHost(dir, async (host) => {
      const pid = await pidOf(host.baseUrl);
      expect(pid).not.toBe(process.pid);
      expect(host.app.worker.pid).toBe(pid);
      const env = await (await fetch(`${host.baseUrl}/api/env`)).json();
      expect(env).toEqual({
        cwd: dir,
        runtime: "node",
        root: dir,
        environment: "Development",
        data: "read relative to the app folder",
        // As node runs the Node worker: source maps only when NODE_OPTIONS asks (the dev host's tsx turned them on).
        sourceMaps: /--enable-source-maps/.test(process.env.NODE_OPTIONS ?? ""),
      });
    });
  });

  for (const [route, what] of [
    ["throwLater", "thrown from a timer callback"],
    ["rejectLater", "an unhandled rejection"],
  ] as const) {
    it(`survives ${what}: the invocation fails, the worker restarts, the host and the other functions go on`, async () => {
      const dir = appDir({ "src/index.js": APP, "data.txt": "" });
      await withHost(dir, async (host, logs) => {
        const before = await pidOf(host.baseUrl);
        const res = await fetch(`${host.baseUrl}/api/${route}`);
        expect(res.status).toBe(500);
        const after = await pidOf(host.baseUrl);
        expect(after).not.toBe(before);
        expect(alive(before)).toBe(false);
        const messages = logs.map((r) => r.message);
        expect(
          messages.some(
            (m) =>
              m.startsWith(
                "Worker uncaught exception (learn more: https://go.microsoft.com/fwlink/?linkid=2097909 ): ",
              ) && m.includes(what),
          ),
        ).toBe(true);
        expect(messages.some((m) => m.startsWith(`Language Worker Process exited. Pid=${before}.`))).toBe(
          true,
        );
        expect(messages.some((m) => /Executed 'Functions\.\w+' \(Failed/.test(m) && m.includes(route))).toBe(
          true,
        );
      });
    });
  }

  it("a CPU-bound handler freezes only its worker; past functionTimeout the worker is replaced", async () => {
    const dir = appDir({
      "src/index.js": APP,
      "data.txt": "",
      "host.json": JSON.stringify({ version: "2.0", functionTimeout: "00:00:02" }),
    });
    const clock = new FakeClock();
    await withHost(
      dir,
      async (host, logs) => {
        const before = await pidOf(host.baseUrl);
        let answered = false;
        const spin = fetch(`${host.baseUrl}/api/spin`).then((r) => {
          answered = true;
          return r;
        });
        await waitUntil("the spin to start", () =>
          logs.some((r) => r.message.startsWith("Executing 'Functions.spin'")),
        );
        // The host itself still answers while the app's only worker spins (an unknown route is the host's 404).
        expect((await fetch(`${host.baseUrl}/api/nothing-here`)).status).toBe(404);
        await clock.advance(1999);
        expect(answered).toBe(false);
        await clock.advance(1);
        expect((await spin).status).toBe(500);
        await waitUntil("the worker to be replaced", () => !alive(before));
        expect(await pidOf(host.baseUrl)).not.toBe(before);
        expect(
          logs.some(
            (r) =>
              r.message === `A function timeout has occurred. Restarting the worker process (pid ${before}).`,
          ),
        ).toBe(true);
      },
      { clock },
    );
  });

  it("backs off while a worker keeps dying, with the waits doubling up to the maximum", async () => {
    const dir = appDir({
      "src/index.js": `
import { app } from "@azure/functions";
app.http("ok", { handler: async () => ({ body: "ok" }) });
setTimeout(() => { throw new Error("dies soon after loading"); }, 20);
`,
    });
    await withHost(
      dir,
      async (_host, logs) => {
        await waitUntil(
          "five restarts",
          () => logs.filter((r) => r.message.startsWith("Language Worker Process exited.")).length >= 5,
        );
        const waits = logs
          .map((r) => /the next one starts in (\d+) ms/.exec(r.message)?.[1])
          .filter((w) => w !== undefined)
          .map(Number);
        expect(waits.slice(0, 4)).toEqual([10, 20, 40, 40]);
      },
      { env: { DEVHOST_WORKER_RESTART_BACKOFF_MS: "10", DEVHOST_WORKER_RESTART_BACKOFF_MAX_MS: "40" } },
    );
  });

  it("never outlives its host: kill -9 of the dev host ends the worker too", async () => {
    const dir = appDir({ "src/index.js": APP, "data.txt": "" });
    const script = fileURLToPath(new URL("./support/dev-host-child.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script, dir], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout as NonNullable<typeof child.stdout> }).once("line", resolve);
        child.once("exit", (code) => reject(new Error(`the dev host child exited (${code}) before serving`)));
      });
      const { baseUrl, workerPid } = JSON.parse(line) as { baseUrl: string; workerPid: number };
      expect(await pidOf(baseUrl)).toBe(workerPid);
      child.kill("SIGKILL");
      await waitUntil("the orphaned worker to exit", () => !alive(workerPid));
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("sends a W3C trace context with every invocation, a child of the caller's traceparent", async () => {
    const dir = appDir({ "src/index.js": APP, "data.txt": "" });
    await withHost(dir, async (host) => {
      const own = (await (await fetch(`${host.baseUrl}/api/trace`)).json()) as { traceParent: string };
      expect(own.traceParent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
      const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      const child = (await (
        await fetch(`${host.baseUrl}/api/trace`, { headers: { traceparent: parent } })
      ).json()) as {
        traceParent: string;
      };
      expect(child.traceParent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
      expect(child.traceParent).not.toBe(parent);
    });
  });
});

describe("the HTTP stream proxy in the worker", () => {
  const STREAM_APP = `
import { app } from "@azure/functions";
app.setup({ enableHttpStream: true });
app.http("up", { handler: async () => ({ body: "up" }) });
app.http("count", { handler: async (req) => ({ body: String((await req.arrayBuffer()).byteLength) }) });
`;
  /** Local addresses listening on `port`, from the kernel's socket tables (hex, as /proc/net/tcp lists them). */
  const listeners = (port: number) =>
    ["/proc/net/tcp", "/proc/net/tcp6"].flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .slice(1)
        .map((line) => line.trim().split(/\s+/))
        .filter((f) => f.length > 3 && f[3] === "0A" && Number.parseInt(f[1].split(":")[1], 16) === port)
        .map((f) => f[1].split(":")[0]),
    );
  const raw = (url: string, headers: Record<string, string>) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(url, { headers }, (res) => {
        let body = "";
        res.on("data", (c) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      req.end();
    });

  it("listens on loopback only and answers a request with a missing or unknown invocation id", async () => {
    const dir = appDir({ "src/index.js": STREAM_APP });
    await withHost(
      dir,
      async (host) => {
        expect(await (await fetch(`${host.baseUrl}/api/up`)).text()).toBe("up");
        const uri = new URL(host.app.capabilities.HttpUri);
        expect(listeners(Number(uri.port))).toEqual(["0100007F"]); // 127.0.0.1 and nothing else
        const proxy = `http://127.0.0.1:${uri.port}/api/up`;
        const missing = await raw(proxy, {});
        expect(missing.status).toBe(400);
        expect(JSON.parse(missing.body).code).toBe("MissingInvocationId");
        const unknown = await raw(proxy, { "x-ms-invocation-id": "no-such-invocation" });
        expect(unknown.status).toBe(404);
        expect(JSON.parse(unknown.body).code).toBe("UnknownInvocation");
        expect(await (await fetch(`${host.baseUrl}/api/up`)).text()).toBe("up");
      },
      { env: { DEVHOST_STREAM_PROXY_WAIT_MS: "50" } },
    );
  });

  it("bounds a streamed body by FUNCTIONS_REQUEST_BODY_SIZE_LIMIT as it arrives, chunked or declared", async () => {
    const dir = appDir({ "src/index.js": STREAM_APP });
    await withHost(
      dir,
      async (host) => {
        // (A streamed answer is chunked: read with fetch; the 413s below carry a length.)
        const at = await fetch(`${host.baseUrl}/api/count`, { method: "POST", body: "x".repeat(2048) });
        expect(await at.text()).toBe("2048");
        const chunked = await rawCall(
          host.port,
          "POST",
          "/api/count",
          { host: "127.0.0.1", "transfer-encoding": "chunked" },
          `400\r\n${"y".repeat(1024)}\r\n401\r\n${"y".repeat(1025)}\r\n0\r\n\r\n`,
        );
        expect(chunked.status).toBe(413);
        expect(JSON.parse(chunked.body).code).toBe("RequestBodyTooLarge");
        const declared = await rawCall(
          host.port,
          "POST",
          "/api/count",
          { host: "127.0.0.1" },
          "z".repeat(2049),
        );
        expect(declared.status).toBe(413);
        // The worker and the proxy go on.
        expect(await (await fetch(`${host.baseUrl}/api/up`)).text()).toBe("up");
      },
      { env: { FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: "2048" } },
    );
  });
});
