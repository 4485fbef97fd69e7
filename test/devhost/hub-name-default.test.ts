/**
 * host.json's `extensions.durableTask.hubName` naming an app setting (`%TASKHUB_NAME%`, as this app and the Durable
 * quickstart write it) that is unset: the dev host warns and gives the hub its default name instead of refusing to
 * start, so that `npm start` works on a fresh clone without local.settings.json. Set, the setting is the name.
 */
import { afterAll, describe, expect, it } from "vitest";
import { type LogRecord, startDevHost } from "../../packages/devhost/src/index.js";
import { scratchApps } from "../support/scratch-apps.js";

const apps = scratchApps("hub-name-");
afterAll(() => apps.removeAll());

const app = () =>
  apps.write({
    "package.json": JSON.stringify({ main: "index.js" }),
    "host.json": JSON.stringify({ extensions: { durableTask: { hubName: "%DEVHOST_TEST_HUB_NAME%" } } }),
    "index.js": `const { app } = require("@azure/functions");
app.http("on", { handler: () => ({ body: "on" }) });`,
  });

describe("host.json hubName: %SETTING%", () => {
  it("unset: the host starts with the default hub name and one warning naming the setting", async () => {
    const logs: LogRecord[] = [];
    const env = { ...process.env };
    delete env.DEVHOST_TEST_HUB_NAME;
    const host = await startDevHost({ appDir: app(), port: 0, env, logSink: (r) => logs.push(r) });
    try {
      expect(host.app.durableHubName).toBeUndefined();
      expect(await (await fetch(`${host.baseUrl}/api/on`)).text()).toBe("on");
      const warnings = logs.filter(
        (r) => r.level === "warning" && r.message.includes("DEVHOST_TEST_HUB_NAME"),
      );
      expect(warnings.map((r) => r.message)).toEqual([
        "host.json extensions.durableTask.hubName: '%DEVHOST_TEST_HUB_NAME%' does not resolve to a value (app setting DEVHOST_TEST_HUB_NAME is unset). The dev host uses its default task hub name; the Functions host would not start: set it in local.settings.json.",
      ]);
    } finally {
      await host.close();
    }
  });

  it("set: the setting's value is the hub name", async () => {
    const host = await startDevHost({
      appDir: app(),
      port: 0,
      env: { ...process.env, DEVHOST_TEST_HUB_NAME: "feedhub3" },
      logSink: () => {},
    });
    try {
      expect(host.app.durableHubName).toBe("feedhub3");
    } finally {
      await host.close();
    }
  });
});
