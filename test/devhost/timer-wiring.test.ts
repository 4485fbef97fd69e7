import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { timerTriggerRunner } from "../../packages/devhost/src/builtinTimer.js";
import { type LogRecord, startDevHost } from "../../packages/devhost/src/index.js";

const scratch = fileURLToPath(new URL("../../.data/test-apps", import.meta.url));
const created: string[] = [];
afterAll(() => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});

describe("timerTrigger wired into the dev host", () => {
  it("runs on startup and on schedule through the worker contract, and stops with the host", async () => {
    mkdirSync(scratch, { recursive: true });
    const dir = mkdtempSync(join(scratch, "timer-"));
    created.push(dir);
    writeFileSync(join(dir, "package.json"), JSON.stringify({ main: "index.js" }));
    writeFileSync(
      join(dir, "local.settings.json"),
      JSON.stringify({ Values: { DEVHOST_FAST: "*/1 * * * * *" } }),
    );
    writeFileSync(
      join(dir, "index.js"),
      `require("@azure/functions").app.timer("fast", { schedule: "%DEVHOST_FAST%", runOnStartup: true,
  handler: (timer, context) => context.log("tick " + typeof timer.isPastDue + " " + JSON.stringify(timer.schedule)) });`,
    );
    const logs: LogRecord[] = [];
    const host = await startDevHost({
      appDir: dir,
      port: 0,
      logSink: (r) => logs.push(r),
      triggers: { timerTrigger: timerTriggerRunner() },
    });
    const ticks = () => logs.filter((r) => r.category === "Function.fast.User");
    await waitUntil("the start-up run and one scheduled run", () => ticks().length >= 2);
    await host.close();
    const count = ticks().length;
    expect(count).toBeGreaterThanOrEqual(2);
    expect(ticks()[0].message).toBe('tick boolean {"adjustForDST":true}');
    expect(logs.some((r) => /^Executing 'Functions.fast' \(Reason='Timer fired at /.test(r.message))).toBe(
      true,
    );
    await new Promise((r) => setTimeout(r, 1200));
    expect(ticks().length).toBe(count); // stopped with the host
  });
});
