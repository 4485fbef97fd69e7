import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { LogRecord } from "../../packages/devhost/src/index.js";
import { type InProcessDevHost, startInProcessDevHost } from "../support/dev-host.js";
import { type FrontDoorApp, frontDoorApp } from "../support/front-door-app.js";

// What --watch does after a save whose app does not load (StartedApp.restart(), as the watcher calls it): the port
// keeps answering — the dev host's own routes as before, the app's routes 503 with the load error —, the log says
// why, and the next save that loads serves the app again.

let app: FrontDoorApp | undefined;
let running: InProcessDevHost | undefined;
afterAll(async () => {
  await running?.stop();
  app?.remove();
});

describe("a restart whose app fails to load", () => {
  it("keeps the port: built-in routes answer, app routes 503 with the load error, and the next good save restores", async () => {
    app = frontDoorApp();
    const logs: LogRecord[] = [];
    running = await startInProcessDevHost({
      appDir: app.dir,
      dataDirPrefix: "restart-load-failure-",
      logSink: (r) => logs.push(r),
    });
    const { started } = running;
    const base = started.host.baseUrl;
    expect((await fetch(`${base}/api/echo`, { method: "POST", body: "ok" })).status).toBe(200);

    const index = join(app.dir, "index.js");
    const good = readFileSync(index, "utf8");
    writeFileSync(index, `throw new Error("a broken save");\n${good}`);
    await started.restart();

    const fn = await fetch(`${base}/api/echo`, { method: "POST", body: "ok" });
    expect(fn.status).toBe(503);
    const problem = (await fn.json()) as { code: string; message: string };
    expect(problem.code).toBe("AppLoadFailed");
    expect(problem.message).toMatch(/^The app failed to load: .*a broken save/);
    expect((await fetch(`${base}/api/anything/else`)).status).toBe(503);
    const dashboard = await fetch(`${base}/_dev`);
    expect(dashboard.status).toBe(200);
    expect(await dashboard.text()).toMatch(/<html/i);
    const durable = await fetch(`${base}/runtime/webhooks/durabletask/instances`);
    expect(durable.status).not.toBe(503);
    expect(
      logs.some(
        (r) =>
          r.level === "error" &&
          /The app failed to load: .*a broken save.*the app's routes answer 503/s.test(r.message),
      ),
    ).toBe(true);

    writeFileSync(index, good);
    await started.restart();
    const back = await fetch(`${base}/api/echo`, { method: "POST", body: "ok" });
    expect(back.status).toBe(200);
    expect(await back.json()).toEqual({ method: "POST", bytes: 2 });
    expect(started.host.baseUrl).toBe(base);
  });
});
