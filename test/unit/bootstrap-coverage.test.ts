import { describe, expect, it } from "vitest";
import { uncoveredParts } from "../../packages/changefeed/src/bootstrapper.js";
import { type Lease, LeaseMode, newLease } from "../../packages/changefeed/src/leases/lease.js";

const epk = (min: string, max: string): Lease =>
  newLease("p", "id", { min, max }, null, LeaseMode.LatestVersion);
const v0 = (id: string, min: string, max: string): Lease =>
  newLease("p", "id", { id, min, max }, null, LeaseMode.LatestVersion);
const range = (id: string, minInclusive: string, maxExclusive: string) => ({
  id,
  minInclusive,
  maxExclusive,
});

describe("bootstrap coverage check", () => {
  it("a range is covered by its version-0 lease, or by EPK leases that tile it", () => {
    expect(uncoveredParts(range("0", "", "FF"), [v0("0", "", "FF")])).toEqual([]);
    expect(uncoveredParts(range("0", "", "FF"), [epk("", "20"), epk("20", "FF")])).toEqual([]);
    expect(uncoveredParts(range("1", "20", "30"), [epk("", "FF")])).toEqual([]);
  });

  it("a lease sharing only one bound leaves the rest of the range uncovered (the old check used `||`)", () => {
    expect(uncoveredParts(range("0", "", "FF"), [epk("", "20")])).toEqual([{ min: "20", max: "FF" }]);
    expect(uncoveredParts(range("0", "", "FF"), [epk("30", "FF")])).toEqual([{ min: "", max: "30" }]);
  });

  it("finds gaps between leases, and ignores leases of other ranges", () => {
    expect(
      uncoveredParts(range("0", "10", "30"), [epk("12", "18"), epk("20", "28"), epk("30", "FF")]),
    ).toEqual([
      { min: "10", max: "12" },
      { min: "18", max: "20" },
      { min: "28", max: "30" },
    ]);
    expect(uncoveredParts(range("0", "", "10"), [v0("1", "10", "FF"), epk("10", "FF")])).toEqual([
      { min: "", max: "10" },
    ]);
  });
});
