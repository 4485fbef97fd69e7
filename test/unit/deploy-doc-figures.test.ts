/**
 * docs/deploy.md prices the lease intervals of the deployed trigger (the Functions host's, .NET's algorithm) with
 * the model of `cosmos-feed tune`: its figures are the model's, so a change to the model shows up here.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { tuningDefaults } from "../../bench/lib/tuning-defaults.js";
import { RequestRu, tune } from "../../packages/changefeed/src/tuning/model.js";

const doc = readFileSync(new URL("../../docs/deploy.md", import.meta.url), "utf8").replace(/\s+/g, " ");
const thousands = (n: number) => Math.round(n).toLocaleString("en-US");

describe("docs/deploy.md: the lease interval costs are the tuning model's", () => {
  const leases = 32;
  const dotnet = tune(tuningDefaults(4, leases)).dotnet.leaseContainer;
  const row = (what: string) => {
    const r = dotnet.find((x) => x.what.startsWith(what));
    if (!r) throw new Error(`no '${what}' row`);
    return r;
  };

  it("a lease write and a query of all leases cost what the model charges", () => {
    expect(doc).toContain(`a lease write ${RequestRu.leaseWrite} RU`);
    expect(doc).toContain(`a lease point read ${RequestRu.leasePointRead} RU`);
    const query = row("balancing");
    const perQuery = query.ruPerHour / query.requestsPerHour;
    expect(perQuery).toBeCloseTo(RequestRu.allLeasesQuery(leases), 1);
    expect(doc).toContain(`so ${perQuery.toFixed(1)} RU at ${leases} leases`);
    expect(doc).toContain(`(× ${perQuery.toFixed(1)} RU at ${leases} leases)`);
  });

  it("renewals: a read and a write per lease per renew interval", () => {
    const renewals = row("renewals");
    expect(doc).toContain(`≈ ${thousands(renewals.requestsPerHour / leases / 2)}·L renewals/h`);
    expect(doc).toContain(`≈ ${thousands(renewals.ruPerHour / leases)}·L RU/h`);
  });

  it("says the tune command exists (no 'next issue')", () => {
    expect(doc).toContain("npx cosmos-feed tune --hosts H --leases L");
    expect(doc).not.toMatch(/next issue/);
  });
});
