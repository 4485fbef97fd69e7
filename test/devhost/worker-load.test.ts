import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { settled, until } from "../../bench/lib/until.js";
import { type LogRecord, startDevHost } from "../../packages/devhost/src/index.js";
import { scratchApps } from "../support/scratch-apps.js";

// A worker process that takes longer to load the app than functionTimeout: loading is timed on its own
// (DEVHOST_WORKER_LOAD_TIMEOUT_MS), requests that wait for it do not time it out and kill it again, the next attempt
// waits out the restart back-off, and waiting requests are answered 503 saying why. Judged by answers and log counts.

const apps = scratchApps("worker-load-");
afterAll(() => apps.removeAll());

// While the file `slow` exists in the app folder, loading the app never ends (a top-level await far longer than any
// timeout here); `crash` ends the worker process, so that the next one loads.
const APP = `
import { app } from "@azure/functions";
import { existsSync } from "node:fs";
if (existsSync("slow")) await new Promise((resolve) => setTimeout(resolve, 600_000));
app.http("pid", { handler: async () => ({ jsonBody: { pid: process.pid } }) });
app.http("crash", {
  handler: async () => {
    setTimeout(() => { throw new Error("crash"); }, 0);
    return new Promise(() => {});
  },
});
`;

function appDir(slow: boolean): string {
  return apps.write({
    "package.json": JSON.stringify({ name: "w", type: "module", main: "index.js" }),
    // 5 s: far below the 15 s load bound (what the test is about), and above what one call of `pid` takes on a
    // loaded machine (at 1 s, a CI run beside other work timed the first call out: an empty 500).
    "host.json": JSON.stringify({ version: "2.0", functionTimeout: "00:00:05" }),
    "index.js": APP,
    ...(slow ? { slow: "" } : {}),
  });
}

// The bound times the app's own loading (from the worker's "loading" signal), not the worker's start; 15 s keeps the
// fixture's real loads (one import of @azure/functions) inside it on a busy machine, while the slow load never ends.
const env = {
  ...process.env,
  DEVHOST_WORKER_LOAD_TIMEOUT_MS: "15000",
  DEVHOST_WORKER_RESTART_BACKOFF_MS: "2000",
  DEVHOST_WORKER_RESTART_BACKOFF_MAX_MS: "2000",
};

describe("a worker process that loads slower than functionTimeout", () => {
  it("40 waiting requests get 503 with the reason and Retry-After, no request restarts it, and it comes back", async () => {
    const dir = appDir(false);
    const logs: LogRecord[] = [];
    const host = await startDevHost({ appDir: dir, port: 0, logSink: (r) => logs.push(r), env });
    const count = (re: RegExp) => logs.filter((r) => re.test(r.message)).length;
    try {
      const first = (await (await fetch(`${host.baseUrl}/api/pid`)).json()) as { pid: number };
      writeFileSync(join(dir, "slow"), "");
      expect((await fetch(`${host.baseUrl}/api/crash`)).status).toBe(500);
      const answers = await settled(
        "40 requests answered",
        Promise.all(
          Array.from({ length: 40 }, async () => {
            const res = await fetch(`${host.baseUrl}/api/pid`);
            return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.text() };
          }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(40).fill(503));
      for (const a of answers) {
        expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
        const body = JSON.parse(a.body) as { code: string; message: string };
        expect(body.code).toBe("WorkerUnavailable");
        expect(body.message).toMatch(
          /^The app is not loaded: The worker process did not load the app within 15000 ms \(DEVHOST_WORKER_LOAD_TIMEOUT_MS\)\. The next load attempt starts (in \d+ ms|now); retry then\.$/,
        );
      }
      // No invocation started (none timed out and recycled the loading worker); the loads that did not finish are
      // the timed ones only — one, or two when some request came after the first gave up.
      expect(count(/function timeout has occurred/)).toBe(0);
      expect(count(/^Executing 'Functions\.pid'/)).toBe(1);
      expect(count(/did not load the app within 15000 ms/)).toBeGreaterThanOrEqual(1);
      expect(count(/did not load the app within 15000 ms/)).toBeLessThanOrEqual(2);

      // The next good load brings it back.
      rmSync(join(dir, "slow"));
      const back = await until("the app is served again", async () => {
        const res = await fetch(`${host.baseUrl}/api/pid`);
        return res.status === 200 ? ((await res.json()) as { pid: number }) : undefined;
      });
      expect(back.pid).not.toBe(first.pid);
    } finally {
      await host.close();
    }
  });

  it("a first load past DEVHOST_WORKER_LOAD_TIMEOUT_MS stops the start with that reason", async () => {
    await expect(startDevHost({ appDir: appDir(true), port: 0, logSink: () => {}, env })).rejects.toThrow(
      "The worker process did not load the app within 15000 ms (DEVHOST_WORKER_LOAD_TIMEOUT_MS).",
    );
  });
});
