import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { tuningDefaults } from "../../bench/lib/tuning-defaults.js";
import { tune } from "../../packages/changefeed/src/tuning/model.js";
import { formatTune, tuneReport } from "../../packages/devhost/src/cli/tune.js";
import {
  compareWithMeasurement,
  type InteropMeasurement,
  readInteropMeasurement,
} from "../../packages/devhost/src/tuning/interop.js";

// The .NET column of `cosmos-feed tune` next to bench:interop's measurement of the real .NET processor.

const dir = mkdtempSync(join(tmpdir(), "tune-interop-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A results file shaped as bench:interop writes it (scaled intervals ÷ 10, 4 hosts over 32 leases). */
function resultsFile(dotnet: { requestsPerHour: number; documentRequestsPerHour: number }): string {
  const file = join(dir, `interop-${dotnet.requestsPerHour}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      machine: { date: "2026-11-26T12:49:09.206Z", microsoftAzureCosmos: "3.64.0" },
      method: "… Idle: 4 hosts over 32 leases, Microsoft's defaults …",
      scale: 10,
      idle: { dotnet: { requests: {}, ...dotnet } },
      scaledIntervalsMs: {
        feedPollDelay: 500,
        leaseAcquireInterval: 1300,
        leaseExpirationInterval: 6000,
        leaseRenewInterval: 1700,
      },
    }),
  );
  return file;
}

const modelAt4x32 = tune(tuningDefaults(4, 32)).dotnet.leaseRequestsPerHour;

describe("tune's .NET column against bench:interop", () => {
  it("reads the measured scenario: 4 × 32 at Microsoft's default intervals (unscaled)", () => {
    const m = readInteropMeasurement([
      join(dir, "missing.json"),
      resultsFile({ requestsPerHour: 15_348, documentRequestsPerHour: 14_280 }),
    ]);
    expect(m).toMatchObject({
      hosts: 4,
      leases: 32,
      intervalsMs: { renew: 17_000, acquire: 13_000, expiration: 60_000, poll: 5_000 },
      requestsPerHour: 15_348,
      documentRequestsPerHour: 14_280,
    });
    expect(readInteropMeasurement([join(dir, "missing.json")])).toBeUndefined();
  });

  it("in the measured scenario the measurement replaces the model, with the model's deviation", () => {
    const measured = Math.round(modelAt4x32 * 0.9);
    const m = readInteropMeasurement([
      resultsFile({ requestsPerHour: modelAt4x32, documentRequestsPerHour: measured }),
    ]);
    const r = tuneReport(tuningDefaults(4, 32), m ?? null);
    expect(r.dotnetMeasured?.sameScenario).toBe(true);
    expect(r.dotnetMeasured?.modelRequestsPerHour).toBe(modelAt4x32);
    expect(r.dotnetMeasured?.deviationPct).toBeCloseTo(-10, 0);
    expect(r.dotnetMeasured?.deviationWithQueryPlansPct).toBe(0);
    expect(r.dotnetMeasured?.withinTolerance).toBe(true);
    const text = formatTune(r);
    expect(text).toContain(`measured (bench:interop, 4 × 32 idle`);
    expect(text).toContain(`${measured.toLocaleString("en-US")} without the SDK's query plans`);
    expect(text).toContain("within ±15 %");
  });

  it("elsewhere the model stays, with how far it was from the measurement; beyond ±15 % it says so", () => {
    const m = readInteropMeasurement([
      resultsFile({
        requestsPerHour: Math.round(modelAt4x32 * 1.3),
        documentRequestsPerHour: Math.round(modelAt4x32 * 1.2),
      }),
    ]) as InteropMeasurement;
    const d = compareWithMeasurement(tuningDefaults(16, 32), m);
    expect(d.sameScenario).toBe(false);
    expect(d.modelRequestsPerHour).toBe(modelAt4x32);
    expect(d.withinTolerance).toBe(false);
    const text = formatTune(tuneReport(tuningDefaults(16, 32), m));
    expect(text).toContain("model; checked against a measurement");
    expect(text).toContain("OUTSIDE ±15 %");
    expect(tuneReport(tuningDefaults(16, 32), null).dotnetMeasured).toBeUndefined();
  });
});
