import { describe, expect, it } from "vitest";
import { DURABLE_HUB_SETTINGS, readDurableHubSettings } from "../../packages/devhost/src/durable/settings.js";

describe("durable task hub settings", () => {
  it("takes each default when unset, and reads each knob from its app setting", () => {
    const defaults = readDurableHubSettings({});
    for (const [key, knob] of Object.entries(DURABLE_HUB_SETTINGS)) {
      expect(defaults[key as keyof typeof defaults]).toBe(knob.default);
    }
    expect(readDurableHubSettings({ DURABLE_FEED_POLL_DELAY_MS: "25" }).feedPollDelayMs).toBe(25);
  });

  it("names every bad setting at once, and refuses a renew interval not below the expiration", () => {
    expect(() =>
      readDurableHubSettings({ DURABLE_FEED_POLL_DELAY_MS: "fast", DURABLE_TIMER_SCAN_INTERVAL_MS: "1" }),
    ).toThrow(
      /DURABLE_FEED_POLL_DELAY_MS must be .* got 'fast'[\s\S]*DURABLE_TIMER_SCAN_INTERVAL_MS must be/,
    );
    expect(() =>
      readDurableHubSettings({
        DURABLE_LEASE_RENEW_INTERVAL_MS: "5000",
        DURABLE_LEASE_EXPIRATION_INTERVAL_MS: "5000",
      }),
    ).toThrow(/must be below DURABLE_LEASE_EXPIRATION_INTERVAL_MS/);
  });
});
