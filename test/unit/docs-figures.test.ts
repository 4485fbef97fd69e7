/**
 * Figures docs/tuning.md quotes from the lease cost model are the model's: the RU of an all-leases query and of a
 * lease write, and the .NET columns (requests and RU per hour, from the model) of the Microsoft-defaults table.
 */
import { describe, expect, it } from "vitest";
import { RequestRu, tune } from "../../packages/changefeed/src/tuning/model.js";
import { readDoc, tableRows } from "../support/markdown.js";

const tuning = readDoc("docs/tuning.md");
const num = (cell: string) => Number(cell.replace(/[,\s]/g, ""));

describe("docs/tuning.md's model figures", () => {
  it("the .NET all-leases query at 32 leases and a lease write cost what the model charges", () => {
    const query = /all-leases query per host every 13 s, ([\d.]+) RU at 32 leases/.exec(tuning);
    expect(query?.[1]).toBe(RequestRu.allLeasesQuery(32).toFixed(1));
    const write = /so \*\*([\d.]+) RU\*\*/.exec(tuning);
    expect(write?.[1]).toBe(String(RequestRu.leaseWrite));
  });

  it("the Microsoft-defaults table's .NET columns are the model's", () => {
    const rows = tableRows(tuning, [
      "Microsoft's defaults, 32 leases",
      "ours measured: lease req/h",
      "RU/h",
      ".NET (model): req/h",
      "RU/h",
      "ours / .NET: requests",
      "RU",
    ]);
    expect(rows).toHaveLength(6);
    for (const r of rows) {
      const m = /^(\d+) hosts?, (idle|(\d+) changes\/s)$/.exec(r[0]);
      expect(m, r[0]).not.toBeNull();
      const model = tune({
        hosts: Number(m?.[1]),
        leases: 32,
        writesPerSecond: m?.[3] === undefined ? 0 : Number(m[3]),
        leaseRenewIntervalMs: 17_000,
        leaseAcquireIntervalMs: 13_000,
        leaseExpirationIntervalMs: 60_000,
        feedPollDelayMs: 5_000,
      }).dotnet;
      // The model's figure leads the cell; a measured row adds bench:interop's figures in parentheses after it.
      expect(num(r[3].replace(/\s*\(.*\)$/, "")), `${r[0]}: .NET req/h`).toBe(model.leaseRequestsPerHour);
      // The doc's RU/h is the model's RU/s (two decimals) × 3600: within that rounding of the rows' sum.
      const ruPerHour = model.leaseContainer.reduce((a, row) => a + row.ruPerHour, 0);
      expect(Math.abs(num(r[4]) - ruPerHour), `${r[0]}: .NET RU/h`).toBeLessThanOrEqual(0.005 * 3600 + 3);
    }
  });
});
