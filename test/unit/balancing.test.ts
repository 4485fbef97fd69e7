import { describe, expect, it } from "vitest";
import { EqualPartitionsBalancingStrategy } from "../../src/shared/changefeed/balancing/strategy.js";
import { type Lease, newLease } from "../../src/shared/changefeed/leases/lease.js";

const NOW = 1_000_000;
const EXPIRATION = 60_000;

function lease(token: string, owner: string | null, ageMs = 0): Lease {
  const l = newLease("p", "id", { id: token, min: "", max: "FF" }, null, "Incremental Feed");
  return { ...l, owner, timestampMs: NOW - ageMs };
}

const strategy = new EqualPartitionsBalancingStrategy(EXPIRATION);
const take = (leases: Lease[], me: string) =>
  strategy.selectLeasesToTake(leases, me, NOW).map((l) => l.leaseToken);

describe("EqualPartitionsBalancingStrategy", () => {
  it("lets a lone host take every available lease", () => {
    expect(take([lease("0", null), lease("1", null), lease("2", null)], "a")).toEqual(["0", "1", "2"]);
  });

  it("treats a lease whose owner stopped renewing for longer than the expiration as available", () => {
    const leases = [lease("0", "b", EXPIRATION + 1), lease("1", "b", EXPIRATION - 1)];
    // b is still alive through lease 1, so the target is 1 each: a takes the expired one only.
    expect(take(leases, "a")).toEqual(["0"]);
  });

  it("takes only up to the target share", () => {
    const leases = [lease("0", "b"), lease("1", null), lease("2", null), lease("3", null)];
    // 4 leases, 2 owners → target 2; a owns none → takes two of the available ones.
    expect(take(leases, "a")).toEqual(["1", "2"]);
  });

  it("steals exactly one lease from the busiest owner when nothing is available", () => {
    const leases = [lease("0", "b"), lease("1", "b"), lease("2", "b"), lease("3", "c")];
    expect(take(leases, "a")).toEqual(["0"]);
  });

  it("does not steal when the busiest owner has no more than the target and only one is needed", () => {
    const leases = [lease("0", "b"), lease("1", "b"), lease("2", "c"), lease("3", "c"), lease("4", "a")];
    // 5 leases, 3 owners → target 2; a has 1, needs 1; b and c have 2 = target → no steal.
    expect(take(leases, "a")).toEqual([]);
  });

  it("takes nothing when already at the target", () => {
    expect(take([lease("0", "a"), lease("1", "b")], "a")).toEqual([]);
  });

  it("ignores a duplicate lease token instead of acting on it twice", () => {
    expect(take([lease("0", null), lease("0", null)], "a")).toEqual(["0"]);
  });
});
