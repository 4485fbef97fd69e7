/**
 * A task hub name the Durable extension's Azure Storage provider refuses (AzureStorageOptions.ValidateHubName: a
 * letter, then letters and digits, 3 to 50 characters) stops the dev host with the extension's own message, as the
 * extension fails to start — it used to start silently. The app is test/fixtures/app-durable, whose host.json takes
 * its hub name from the setting FIXTURE_HUB.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { taskHubNameError } from "../../packages/devhost/src/durable/hub-name.js";
import { startInProcessDevHost } from "../support/dev-host.js";

const appDir = fileURLToPath(new URL("../fixtures/app-durable", import.meta.url));

describe("task hub names", () => {
  it.each(["9bad_hub!", "ab"])("the dev host refuses %j in the extension's words", async (name) => {
    const start = startInProcessDevHost({ appDir, dataDirPrefix: "hub-name-", env: { FIXTURE_HUB: name } });
    await expect(start).rejects.toThrow(
      `host.json extensions.durableTask.hubName: Task hub name '${name}' should contain only alphanumeric characters, start with a letter, and have length between 3 and 45.`,
    );
  });

  it("accepts what the extension accepts: 3 to 50 letters and digits starting with a letter", () => {
    for (const ok of ["abc", "TestHubName", "Hub2", "a".repeat(45), "a".repeat(50)]) {
      expect(taskHubNameError(ok), ok).toBeUndefined();
    }
    for (const bad of ["a".repeat(51), "1hub", "my-hub", "my_hub", "hub ", "", "ab", "héllo"]) {
      expect(taskHubNameError(bad), bad).toMatch(/^Task hub name '.*' should contain only alphanumeric/);
    }
  });
});
