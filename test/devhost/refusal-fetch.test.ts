import { afterAll, describe, expect, it } from "vitest";
import { settled } from "../../bench/lib/until.js";
import { type FrontDoorApp, frontDoorApp } from "../support/front-door-app.js";
import { type CliRun, killAll, removeScratch, runCli, scratchDir } from "../support/start-cli.js";

// A refusal a client reads while it is still sending its body: Node's fetch (undici) POSTing 5 MB is answered 413
// and sees that answer — not ECONNRESET because the dev host reset the connection with the body still arriving.
// The dev host runs in a process of its own (`cosmos-feed start`), as users run it: within one process the reset
// and the answer reach the client in an order that hides the problem.

const runs: CliRun[] = [];
let app: FrontDoorApp | undefined;
afterAll(() => {
  killAll(runs);
  removeScratch();
  app?.remove();
});

const FIVE_MB = Buffer.alloc(5 * 1024 * 1024, 0x7b);

async function post(
  url: string,
): Promise<{ status: number; body: Record<string, unknown>; connection: string | null }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: FIVE_MB,
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    connection: res.headers.get("connection"),
  };
}

describe("413 for a body still being sent", () => {
  it("fetch() POSTing 5 MB to the durable start route and to an app route reads the 413", async () => {
    app = frontDoorApp({ values: { FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: "1048576" } });
    const run = runCli([
      "start",
      app.dir,
      "--port",
      "0",
      "--emulator-port",
      "0",
      "--data-dir",
      scratchDir("refusal-data-"),
      "--no-build",
    ]);
    runs.push(run);
    const [, base] = await settled("the dev host starts", run.waitFor(/Dashboard: (http:\/\/\S+)\/_dev/));
    // Several times each: the reset used to lose the answer in about half of the calls.
    for (let i = 0; i < 10; i++) {
      const durable = await post(`${base}/runtime/webhooks/durabletask/orchestrators/hello`);
      expect(durable).toMatchObject({
        status: 413,
        connection: "close",
        body: { code: "RequestBodyTooLarge" },
      });
      expect(String(durable.body.message)).toMatch(
        /the durable HTTP API \(DURABLE_MAX_PAYLOAD_BYTES \+ 64 KiB\)/,
      );
      const fn = await post(`${base}/api/echo`);
      expect(fn).toMatchObject({ status: 413, connection: "close", body: { code: "RequestBodyTooLarge" } });
      expect(String(fn.body.message)).toMatch(/1048576 bytes.*FUNCTIONS_REQUEST_BODY_SIZE_LIMIT/);
    }
    // The dev host still serves.
    expect((await fetch(`${base}/api/echo`, { method: "POST", body: "ok" })).status).toBe(200);
    run.child.kill("SIGINT");
    expect(await settled("the dev host stops", run.exited)).toBe(0);
  });
});
