import { createServer, type IncomingMessage, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FunctionTimeoutError, withFunctionTimeout } from "../../packages/devhost/src/functionTimeout.js";
import { readBody } from "../../packages/devhost/src/http/body.js";
import { LIFECYCLE } from "../../packages/devhost/src/lifecycle/settings.js";
import { consoleSink } from "../../packages/devhost/src/logger.js";
import { HostGuard, parseAllowedHosts } from "../../packages/emulator/src/hosts.js";

// Work the dev host does for every request, counted (bench:app:single measures what it costs; no test judges a
// time): what a request without a body sets up, how often a Host header is parsed, how many timers
// functionTimeout arms, how many writes a request's two console lines take.

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a request without a body", () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => server?.close(r));
    server = undefined;
  });

  /** Sends one request to a server whose handler is `onRequest`; resolves with the answer's body. */
  async function exchange(
    onRequest: (req: IncomingMessage) => Promise<string>,
    options: { method: string; headers?: Record<string, string>; body?: string },
  ): Promise<string> {
    server = createServer((req, res) => {
      void onRequest(req).then((text) => res.end(text));
    });
    await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    return new Promise((resolve, reject) => {
      const req = request(
        { port, host: "127.0.0.1", method: options.method, headers: options.headers },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => {
            text += c;
          });
          res.on("end", () => resolve(text));
        },
      );
      req.on("error", reject);
      req.end(options.body);
    });
  }

  it("is not read: no listener, no flowing stream, an empty body at once", async () => {
    const seen = await exchange(
      async (req) => {
        const body = readBody(req, 1024);
        // Synchronously after the call: nothing was set up on the request.
        const setUp = `listeners ${req.listenerCount("data") + req.listenerCount("end")}, flowing ${req.readableFlowing}`;
        const bytes = await body;
        return `${setUp}; ${bytes instanceof Buffer ? bytes.length : bytes} bytes`;
      },
      { method: "GET" },
    );
    expect(seen).toBe("listeners 0, flowing null; 0 bytes");
  });

  it("is told apart from one with a body (Content-Length, chunked, chunked and empty), which is read", async () => {
    const read = (req: IncomingMessage) =>
      readBody(req, 1024).then((b): string => (typeof b === "string" ? b : `[${b.toString()}]`));
    expect(await exchange(read, { method: "POST", body: "hello" })).toBe("[hello]");
    expect(
      await exchange(read, { method: "POST", headers: { "transfer-encoding": "chunked" }, body: "chunked" }),
    ).toBe("[chunked]");
    expect(await exchange(read, { method: "POST", headers: { "transfer-encoding": "chunked" } })).toBe("[]");
    expect(await exchange(read, { method: "DELETE", headers: { "content-length": "0" } })).toBe("[]");
  });
});

describe("HostGuard", () => {
  it("parses a Host value once, however many requests send it, and keeps each verdict", () => {
    const guard = new HostGuard(parseAllowedHosts("api.example.com"));
    for (let i = 0; i < 1000; i++) {
      expect(guard.check("127.0.0.1:7071")).toBeUndefined();
      expect(guard.check("api.example.com")).toBeUndefined();
      expect(guard.check("evil.example.net")?.code).toBe("HostNotAllowed");
      expect(guard.check("not a host")?.code).toBe("InvalidHost");
    }
    expect(guard.checked).toBe(4);
    expect(guard.check(undefined)).toBeUndefined();
  });

  it("keeps at most maxKept values (then starts over) and none longer than a host name", () => {
    const guard = new HostGuard(parseAllowedHosts(undefined), 3);
    for (const name of ["a.localhost", "b.localhost", "c.localhost", "d.localhost", "a.localhost"])
      expect(guard.check(name)).toBeUndefined();
    // The fourth name started the memo over: a.localhost was parsed again.
    expect(guard.checked).toBe(5);
    const long = `${"x".repeat(400)}.localhost`;
    expect(guard.check(long)).toBeUndefined();
    expect(guard.check(long)).toBeUndefined();
    expect(guard.checked).toBe(7);
  });
});

describe("functionTimeout on the system clock", () => {
  it("arms one timer for a thousand invocations one after another, not one each", async () => {
    const timers = vi.spyOn(globalThis, "setTimeout");
    const before = timers.mock.calls.length;
    for (let i = 0; i < 1000; i++) {
      expect(await withFunctionTimeout(Promise.resolve(i), "f", 30 * 60_000, () => {})).toBe(i);
    }
    expect(timers.mock.calls.length - before).toBeLessThanOrEqual(1);
  });

  it("still times an invocation out: one with an earlier deadline than the armed timer's re-arms it", async () => {
    let lateTimeouts = 0;
    // Armed for this one's deadline (a minute away) first …
    const late = withFunctionTimeout(new Promise<never>(() => {}), "late", 60_000, () => lateTimeouts++);
    late.catch(() => {});
    // … then one due sooner: it times out now, not a minute from now (the test would time out first).
    let timeouts = 0;
    const outcome = await withFunctionTimeout(
      new Promise<never>(() => {}),
      "soon",
      20,
      () => timeouts++,
    ).catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(FunctionTimeoutError);
    expect((outcome as Error).message).toBe(
      "Timeout value of 00:00:00.020 was exceeded by function: Functions.soon.",
    );
    expect(timeouts).toBe(1);
    expect(lateTimeouts).toBe(0);
    // An invocation that ends before its deadline is answered with its own result, and never times out.
    let otherTimeouts = 0;
    expect(await withFunctionTimeout(Promise.resolve("done"), "g", 20, () => otherTimeouts++)).toBe("done");
    const failed = await withFunctionTimeout(
      Promise.reject(new Error("boom")),
      "h",
      20,
      () => otherTimeouts++,
    ).catch((e: unknown) => (e as Error).message);
    expect(failed).toBe("boom");
    await withFunctionTimeout(new Promise<never>(() => {}), "after", 20, () => {}).catch(() => {});
    expect(otherTimeouts).toBe(0);
  });
});

describe("the console", () => {
  it("writes a request's Executing and Executed lines, logged in different turns, in one write", () => {
    // Fake timers: the turns between the two lines are the test's, not the machine's (no time is judged).
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate"] });
    try {
      const writes = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
      const marker = `request-work-${process.pid}`;
      const ours = () => writes.mock.calls.map(([text]) => String(text)).filter((t) => t.includes(marker));
      consoleSink({
        time: new Date(),
        level: "information",
        category: "Function.f",
        message: `Executing ${marker}`,
      });
      vi.advanceTimersByTime(1); // the invocation's turns (and any setImmediate) run
      consoleSink({
        time: new Date(),
        level: "information",
        category: "Function.f",
        message: `Executed ${marker}`,
      });
      expect(ours()).toHaveLength(0); // nothing written yet: after the answer, not in its way
      vi.advanceTimersByTime(LIFECYCLE.consoleFlushMs);
      expect(ours()).toHaveLength(1);
      expect(ours()[0]).toMatch(
        new RegExp(
          `^\\[\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\] Executing ${marker}\\n\\[[^\\]]+\\] Executed ${marker}\\n$`,
        ),
      );
    } finally {
      vi.useRealTimers();
    }
  });
});
