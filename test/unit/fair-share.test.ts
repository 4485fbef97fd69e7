import { describe, expect, it } from "vitest";
import {
  FairShareBalancingStrategy,
  fairTargets,
  isSettled,
} from "../../packages/changefeed/src/balancing/fair-share.js";
import { supersededTokens } from "../../packages/changefeed/src/balancing/superseded.js";
import { type Lease, newLease, REPLACES_PROPERTY } from "../../packages/changefeed/src/leases/lease.js";

const NOW = 1_000_000;
const EXPIRATION = 60_000;

function lease(token: string, owner: string | null, ageMs = 0, range = { min: "", max: "FF" }): Lease {
  const l = newLease("p", "id", { id: token, ...range }, null, "Incremental Feed");
  return { ...l, owner, timestampMs: NOW - ageMs };
}

/** `count` leases owned by `owner`, tokens `${owner}-0`… */
const ownedBy = (owner: string, count: number) =>
  Array.from({ length: count }, (_, i) => lease(`${owner}-${String(i).padStart(3, "0")}`, owner));

const strategy = new FairShareBalancingStrategy(EXPIRATION, () => 0);
const take = (leases: Lease[], me: string) =>
  strategy.selectLeasesToTake(leases, me, NOW).map((l) => l.leaseToken);

/** Every host acts on one view, one after the other, each after the previous host's takes: the final counts. */
function actInTurn(leases: Lease[], hosts: string[]): Map<string, number> {
  let view = leases;
  for (const h of hosts) {
    const taken = new Set(strategy.selectLeasesToTake(view, h, NOW).map((l) => l.leaseToken));
    view = view.map((l) => (taken.has(l.leaseToken) ? { ...l, owner: h, timestampMs: NOW } : l));
  }
  const counts = new Map(hosts.map((h) => [h, 0]));
  for (const l of view) if (l.owner) counts.set(l.owner, (counts.get(l.owner) ?? 0) + 1);
  return counts;
}

describe("FairShareBalancingStrategy", () => {
  it("lets a lone host take every lease on a first start, from a random start", () => {
    expect(take([lease("0", null), lease("1", null), lease("2", null)], "a")).toEqual(["0", "1", "2"]);
    const late = new FairShareBalancingStrategy(EXPIRATION, () => 0.5);
    const order = late.selectLeasesToTake([lease("0", null), lease("1", null), lease("2", null)], "a", NOW);
    expect(order.map((l) => l.leaseToken)).toEqual(["1", "2", "0"]);
  });

  it("gives a host joining others one lease (a foothold), not its whole share", () => {
    expect(take([lease("0", "b"), lease("1", null), lease("2", null), lease("3", null)], "a")).toEqual(["1"]);
  });

  it("takes a foothold from a host above the floor, never from one at it", () => {
    // 7 leases, hosts b (5), c (2), a (0): floor ⌊7/3⌋ = 2 → only b can give one.
    const leases = [...ownedBy("b", 5), ...ownedBy("c", 2)];
    const picks = new Set<string>();
    for (const draw of [0, 0.3, 0.6, 0.99]) {
      const s = new FairShareBalancingStrategy(EXPIRATION, () => draw);
      for (const l of s.selectLeasesToTake(leases, "a", NOW)) picks.add(l.owner as string);
    }
    expect([...picks]).toEqual(["b"]);
  });

  it("takes the whole fair share in one round once this host holds a lease", () => {
    // 10 leases: b holds 9, a 1 → targets 5 and 5: a takes 4 of b's, in one round.
    const leases = [...ownedBy("b", 9), lease("a-0", "a")];
    expect(take(leases, "a")).toEqual(["b-005", "b-006", "b-007", "b-008"]);
  });

  it("balances a whole fleet in one round when each host acts on what the previous ones did", () => {
    // 100 leases on 4 old hosts (25 each) and 6 newcomers with a foothold each: 100 − 6 = 94 on the old ones.
    const old = ["h0", "h1", "h2", "h3"];
    const newcomers = ["n0", "n1", "n2", "n3", "n4", "n5"];
    const leases = [
      ...ownedBy("h0", 24),
      ...ownedBy("h1", 24),
      ...ownedBy("h2", 23),
      ...ownedBy("h3", 23),
      ...newcomers.map((n) => lease(`${n}-f`, n)),
    ];
    const counts = actInTurn(leases, [...newcomers].reverse().concat(old));
    expect([...counts.values()].every((c) => c === 10)).toBe(true);
  });

  it("moves nothing in a balanced fleet, whoever holds the extra leases", () => {
    // 23 leases over 5 hosts: ⌊23/5⌋ = 4, three hosts hold 5.
    const leases = [
      ...ownedBy("e", 5),
      ...ownedBy("a", 4),
      ...ownedBy("d", 5),
      ...ownedBy("b", 4),
      ...ownedBy("c", 5),
    ];
    for (const h of ["a", "b", "c", "d", "e"]) expect(take(leases, h)).toEqual([]);
  });

  it("hands expired leases to the hosts short of their share, each a different slice", () => {
    // 12 leases: x crashed (4 expired), a, b, c hold 3, 3, 2 → targets 4 each.
    const leases = [
      ...ownedBy("x", 4).map((l) => ({ ...l, timestampMs: NOW - EXPIRATION - 1 })),
      ...ownedBy("a", 3),
      ...ownedBy("b", 3),
      ...ownedBy("c", 2),
    ];
    expect(take(leases, "a")).toEqual(["x-000"]);
    expect(take(leases, "b")).toEqual(["x-001"]);
    expect(take(leases, "c")).toEqual(["x-002", "x-003"]);
  });

  it("does not count the other hosts' duplicate tokens twice", () => {
    expect(take([lease("0", "a"), lease("1", "b"), lease("1", "b")], "a")).toEqual([]);
  });

  it("gives every lease a holder when hosts outnumber leases, and moves none after", () => {
    const leases = [lease("0", "b"), lease("1", "b"), lease("2", "c")];
    // 3 leases, hosts a, b, c: each should hold one: a's foothold is one of b's (the first, with draw 0), never c's.
    expect(take(leases, "a")).toEqual(["0"]);
    const after = [lease("0", "a"), lease("1", "b"), lease("2", "c")];
    for (const h of ["a", "b", "c", "d"]) expect(take(after, h)).toEqual([]);
  });
});

describe("isSettled", () => {
  it("leaves hosts within one lease of a share of 4 or more alone", () => {
    // 30 leases over 3 hosts: 9, 10, 11 is settled; 8, 11, 11 is not.
    expect(isSettled([9, 10, 11], 30)).toBe(true);
    expect(isSettled([8, 11, 11], 30)).toBe(false);
  });

  it("wants the counts at most one apart below a share of 4", () => {
    expect(isSettled([1, 3], 4)).toBe(false);
    expect(isSettled([2, 2], 4)).toBe(true);
    expect(isSettled([2, 1, 0], 3)).toBe(false);
  });

  it("moves nothing between a host one over and one under a share of 10", () => {
    const leases = [...ownedBy("a", 9), ...ownedBy("b", 11), ...ownedBy("c", 10)];
    for (const h of ["a", "b", "c"]) expect(take(leases, h)).toEqual([]);
  });
});

describe("fairTargets", () => {
  it("puts the extra leases on hosts already above the floor, then by name", () => {
    const owned = new Map([
      ["c", ownedBy("c", 6)],
      ["a", ownedBy("a", 1)],
      ["b", ownedBy("b", 3)],
    ]);
    // 10 over 3: floor 3, one extra: c holds more than 3 → c gets 4.
    expect(Object.fromEntries(fairTargets(owned, 10))).toEqual({ a: 3, b: 3, c: 4 });
  });
});

describe("supersededTokens", () => {
  const parent = lease("P", "a", 0, { min: "10", max: "30" });
  const child = (token: string, min: string, max: string) => ({
    ...lease(token, "a", 0, { min, max }),
    properties: { [REPLACES_PROPERTY]: "P" },
  });

  it("names a parent whose children tile its range", () => {
    expect([...supersededTokens([parent, child("c1", "10", "20"), child("c2", "20", "30")])]).toEqual(["P"]);
  });

  it("keeps a parent whose replacement was cut short (a child missing)", () => {
    expect(supersededTokens([parent, child("c1", "10", "20")]).size).toBe(0);
  });

  it("leaves the parent out of the fair share: two hosts, two live leases, one each", () => {
    const leases = [parent, child("c1", "10", "20"), child("c2", "20", "30")];
    // Counted, P would make a's 3 leases against b's 0 a target of 2 for b; without it, 1.
    expect(take(leases, "b")).toEqual(["c1"]);
    const withFoothold = [parent, child("c1", "10", "20"), { ...child("c2", "20", "30"), owner: "b" }];
    expect(take(withFoothold, "b")).toEqual([]);
  });
});
