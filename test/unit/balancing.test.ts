import { describe, expect, it } from "vitest";
import { EqualPartitionsBalancingStrategy } from "../../packages/changefeed/src/balancing/strategy.js";
import {
  assignSuccessors,
  handedTo,
  nextSlotStart,
  slotOwner,
  watchParticipants,
} from "../../packages/changefeed/src/balancing/watch-schedule.js";
import { HANDOFF_PROPERTY, type Lease, newLease } from "../../packages/changefeed/src/leases/lease.js";

const NOW = 1_000_000;
const EXPIRATION = 60_000;

function lease(token: string, owner: string | null, ageMs = 0): Lease {
  const l = newLease("p", "id", { id: token, min: "", max: "FF" }, null, "Incremental Feed");
  return { ...l, owner, timestampMs: NOW - ageMs };
}

// `() => 0`: the first of equals, as .NET picks.
const strategy = new EqualPartitionsBalancingStrategy(EXPIRATION, () => 0);
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

describe("EqualPartitionsBalancingStrategy, random pick among equals", () => {
  it("lets hosts with different draws go for different leases, still only up to the target", () => {
    const available = [
      lease("0", null),
      lease("1", null),
      lease("2", null),
      lease("3", null),
      lease("4", "b"),
    ];
    const late = new EqualPartitionsBalancingStrategy(EXPIRATION, () => 0.99);
    // 5 leases, owners b and a → target 3; a takes 3 of the 4 available, starting from a random one.
    expect(late.selectLeasesToTake(available, "a", NOW).map((l) => l.leaseToken)).toEqual(["3", "0", "1"]);
    const busy = [lease("0", "b"), lease("1", "b"), lease("2", "b"), lease("3", "c")];
    expect(late.selectLeasesToTake(busy, "a", NOW).map((l) => l.leaseToken)).toEqual(["2"]);
  });

  it("steals from a random one of the owners tied for busiest (.NET's first one with a draw of 0)", () => {
    // 6 leases, owners b, c, d with 2 each and a → target 2; a needs 2: one steal, from b, c or d.
    const tied = [
      lease("0", "b"),
      lease("1", "b"),
      lease("2", "c"),
      lease("3", "c"),
      lease("4", "d"),
      lease("5", "d"),
    ];
    const victim = (draw: number) =>
      new EqualPartitionsBalancingStrategy(EXPIRATION, () => draw)
        .selectLeasesToTake(tied, "a", NOW)
        .map((l) => l.owner);
    expect(victim(0)).toEqual(["b"]);
    expect(victim(0.5)).toEqual(["c"]);
    expect(victim(0.99)).toEqual(["d"]);
  });
});

describe("watch schedule", () => {
  const T = 1_000;
  const schedule = { participants: ["a", "b", "c"], watchSlot: T };

  it("gives wall-clock slot k to participant k mod N, strictly after now", () => {
    // Slot 3000–3999 is index 3 → 3 mod 3 = 0 → "a".
    expect(nextSlotStart(schedule, "a", 2_999)).toBe(3_000);
    expect(nextSlotStart(schedule, "a", 3_000)).toBe(6_000);
    expect(nextSlotStart(schedule, "b", 3_000)).toBe(4_000);
    expect(nextSlotStart(schedule, "c", 3_500)).toBe(5_000);
    expect(nextSlotStart(schedule, "stranger", 3_500)).toBeUndefined();
    // slotOwner names the host nextSlotStart planned each slot for.
    for (const p of schedule.participants)
      expect(slotOwner(schedule, nextSlotStart(schedule, p, 3_500) as number)).toBe(p);
    expect(slotOwner(schedule, 4_000)).toBe("b");
    expect(slotOwner({ participants: [], watchSlot: T }, 4_000)).toBeUndefined();
    // Every instant has exactly one owner: the next slots of all hosts are N distinct consecutive slots.
    for (const now of [0, 1, 999, 1_000, 12_345, 99_999]) {
      const starts = schedule.participants.map((p) => nextSlotStart(schedule, p, now) as number);
      const sorted = [...starts].sort((x, y) => x - y);
      expect(sorted[1] - sorted[0]).toBe(T);
      expect(sorted[2] - sorted[1]).toBe(T);
      expect(sorted[0] - now).toBeLessThanOrEqual(T);
      expect(sorted[0]).toBeGreaterThan(now);
    }
  });

  it("lists live owners and this host, sorted; expired and released owners are not participants", () => {
    const leases = [lease("0", "c"), lease("1", "b"), lease("2", "z", EXPIRATION + 1), lease("3", null)];
    expect(watchParticipants(leases, "m", NOW, EXPIRATION)).toEqual(["b", "c", "m"]);
  });

  it("honours a hand-off only while it is fresh and the lease is still released", () => {
    const handed = { ...lease("0", null, 500), properties: { [HANDOFF_PROPERTY]: "b" } };
    expect(handedTo(handed, NOW, 1_000)).toBe("b");
    expect(handedTo(handed, NOW, 400)).toBeUndefined();
    expect(handedTo({ ...handed, owner: "c" }, NOW, 1_000)).toBeUndefined();
    expect(handedTo(lease("1", null), NOW, 1_000)).toBeUndefined();
  });

  it("hands a stopping host's leases to the least loaded survivors so they end up balanced", () => {
    const mine = ["0", "1", "2", "3", "4", "5", "6", "7"].map((t) => lease(t, "x"));
    const plan = assignSuccessors(
      mine,
      new Map([
        ["a", 8],
        ["b", 6],
        ["c", 8],
      ]),
    );
    const got = Object.fromEntries([...plan].map(([h, ls]) => [h, ls.length]));
    // 30 leases over 3 survivors → 10 each.
    expect(got).toEqual({ a: 2, b: 4, c: 2 });
    expect(assignSuccessors(mine, new Map()).size).toBe(0);
  });

  it("spreads the leases of hosts stopping at once over different successors (ties by a hash of the stopper)", () => {
    const survivors = new Map(Array.from({ length: 20 }, (_, i) => [`h${String(i).padStart(2, "0")}`, 5]));
    const mine = Array.from({ length: 5 }, (_, i) => lease(String(i), "x"));
    const chosen = (stopping?: string) => [...assignSuccessors(mine, survivors, stopping).keys()].sort();
    // By name, every stopper would pick the same five.
    expect(chosen()).toEqual(["h00", "h01", "h02", "h03", "h04"]);
    const a = chosen("stopper-a");
    const b = chosen("stopper-b");
    expect(a).toHaveLength(5);
    expect(a).not.toEqual(b);
    // The same stopper always picks the same (every host of it computes one plan).
    expect(chosen("stopper-a")).toEqual(a);
  });
});
