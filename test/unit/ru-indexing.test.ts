/**
 * The emulator's write charge follows the container's indexing policy as the service's does: only the leaf paths
 * the policy includes are indexed (the most specific included/excluded rule wins; `id` and `_ts` always), so the
 * app's lean lease container (containers.json: nothing beyond id) pays ~5 RU per lease write, not 6.4.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TASK_HUB_CONTAINER } from "../../packages/devhost/src/durable/cosmos-backend/containers.js";
import {
  countIndexedPaths,
  countLeafPaths,
  type IndexPathPolicy,
  writeCharge,
} from "../../packages/emulator/src/ru/charges.js";
import { RuMeter } from "../../packages/emulator/src/ru/meter.js";
import { Account, normalizeIndexingPolicy } from "../../packages/emulator/src/store/account.js";
import { containerOf } from "../../src/shared/containers.js";

const SEED = 20261126;

const lease = {
  id: "127.0.0.1_AAAAAA==_AAAAAAAAAAA=..0",
  version: 0,
  LeaseToken: "0",
  FeedRange: { Range: { min: "", max: "FF" } },
  Owner: "host-00",
  ContinuationToken: '"12"',
  properties: {},
  timestamp: "2026-11-26T01:00:00.000Z",
  Mode: "Incremental Feed",
  _rid: "AAAAAAAAAAABAAAAAAAAAA==",
  _self: "dbs/AAAAAA==/colls/AAAAAAAAAAA=/docs/AAAAAAAAAAABAAAAAAAAAA==/",
  _etag: '"00000000-0000-0000-0000-000000000001"',
  _attachments: "attachments/",
  _ts: 1_795_000_000,
};

describe("indexed paths of a write", () => {
  it("the lean lease container indexes id and _ts only: a lease write is 5.2 RU, not 6.4", () => {
    const policy = normalizeIndexingPolicy(containerOf("leases").indexingPolicy) as IndexPathPolicy;
    expect(countIndexedPaths(policy, lease)).toBe(2);
    expect(writeCharge(JSON.stringify(lease).length, countIndexedPaths(policy, lease))).toBe(5.2);
    // The default policy (everything but _etag) indexes every other leaf.
    const all = normalizeIndexingPolicy(undefined) as IndexPathPolicy;
    expect(countIndexedPaths(all, lease)).toBe(countLeafPaths(lease) - 1);
    expect(countIndexedPaths({ indexingMode: "none" }, lease)).toBe(0);
  });

  it("the most specific rule wins, included or excluded", () => {
    const doc = { id: "a", a: { b: 1, c: { d: 2, e: 3 } }, f: [1, 2, { g: 4 }], h: "x" };
    const p = (included: string[], excluded: string[]): IndexPathPolicy => ({
      indexingMode: "consistent",
      includedPaths: included.map((path) => ({ path })),
      excludedPaths: excluded.map((path) => ({ path })),
    });
    expect(countIndexedPaths(p([], ["/*"]), doc)).toBe(1); // id
    expect(countIndexedPaths(p(["/a/*"], ["/*"]), doc)).toBe(1 + 3);
    expect(countIndexedPaths(p(["/a/*"], ["/*", "/a/c/*"]), doc)).toBe(1 + 1);
    expect(countIndexedPaths(p(["/a/*", "/a/c/e/?"], ["/*", "/a/c/*"]), doc)).toBe(1 + 2);
    expect(countIndexedPaths(p(["/*"], ["/a/*"]), doc)).toBe(countLeafPaths(doc) - 3);
    expect(countIndexedPaths(p(["/f/[]/?"], ["/*"]), doc)).toBe(1 + 2);
    expect(countIndexedPaths(p(["/f/[]/g/?", "/h/?"], ["/*"]), doc)).toBe(1 + 2);
    expect(countIndexedPaths(p(['/"h"/?'], ["/*"]), doc)).toBe(1 + 1);
    // `/a/?` names the scalar at /a only: an object there has none.
    expect(countIndexedPaths(p(["/a/?"], ["/*"]), doc)).toBe(1);
  });

  it("does not walk a subtree no included rule reaches (the task hub's history tail), and counts the same", () => {
    const policy = normalizeIndexingPolicy(TASK_HUB_CONTAINER.indexingPolicy) as IndexPathPolicy;
    const unread = {
      get events(): never {
        throw new Error("walked a subtree no included path reaches");
      },
    };
    const doc = { id: "instance", pk: "h|i", kind: "instance", stage: { token: "t" }, historyTail: unread };
    // id, pk, kind, stage/token: historyTail is excluded by /* and no included path lies below it.
    expect(countIndexedPaths(policy, doc)).toBe(4);
    expect(countIndexedPaths(policy, { ...doc, historyTail: [{ a: 1 }] })).toBe(4);
  });

  it("a container replace's new indexing policy charges the next write (the parsed rules are not reused)", () => {
    const account = new Account({ enforceThroughput: false, meter: new RuMeter(), now: () => Date.now() });
    account.createDatabase({ id: "d" }, undefined);
    const body = { id: "c", partitionKey: { paths: ["/id"] } };
    const c = account.createContainer("d", body, undefined);
    const indexed = () => countIndexedPaths(c.definition.indexingPolicy as IndexPathPolicy, lease);
    expect(indexed()).toBe(countLeafPaths(lease) - 1);
    const leanPolicy = containerOf("leases").indexingPolicy;
    account.replaceContainer("d", "c", { ...body, indexingPolicy: leanPolicy });
    expect(indexed()).toBe(2);
    account.replaceContainer("d", "c", { ...body, indexingPolicy: { indexingMode: "none" } });
    expect(indexed()).toBe(0);
    // A replace that leaves the policy out keeps it.
    account.replaceContainer("d", "c", { ...body, indexingPolicy: leanPolicy });
    account.replaceContainer("d", "c", { ...body, defaultTtl: 60 });
    expect(indexed()).toBe(2);
  });

  it("fuzz: any policy and document — the count equals an independent reading of the rules, within 0…leaves", () => {
    const segment = fc.constantFrom("a", "b", "c", "[]", "id", "_ts");
    const rulePath = fc
      .tuple(fc.array(segment, { maxLength: 3 }), fc.constantFrom("?", "*"))
      .map(([s, end]) => `/${[...s, end].join("/")}`);
    const policy = fc.record({
      indexingMode: fc.constantFrom("consistent", "none"),
      includedPaths: fc.array(
        rulePath.map((path) => ({ path })),
        { maxLength: 4 },
      ),
      excludedPaths: fc.array(
        rulePath.map((path) => ({ path })),
        { maxLength: 4 },
      ),
    });
    const key = fc.constantFrom("a", "b", "c", "id", "_ts", "z");
    const doc = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.oneof(fc.integer(), fc.string(), fc.boolean(), fc.constant(null)),
        fc.array(tie("value"), { maxLength: 3 }),
        fc.dictionary(key, tie("value"), { maxKeys: 4 }),
      ),
      root: fc.dictionary(key, tie("value"), { maxKeys: 5 }),
    })).root;

    // The reference: list every leaf path, then for each pick the rule with the most segments (`?` before `*`,
    // excluded before included on a full tie) among those that cover it.
    const leaves = (v: unknown, path: string[] = []): string[][] =>
      v !== null && typeof v === "object"
        ? Array.isArray(v)
          ? v.flatMap((x) => leaves(x, [...path, "[]"]))
          : Object.entries(v).flatMap(([k, x]) => leaves(x, [...path, k]))
        : [path];
    const reference = (pol: IndexPathPolicy, d: unknown) => {
      if (pol.indexingMode === "none") return 0;
      const rules = [
        ...(pol.includedPaths as { path: string }[]).map((r) => ({ ...r, included: true })),
        ...(pol.excludedPaths as { path: string }[]).map((r) => ({ ...r, included: false })),
      ].map((r) => {
        const parts = r.path.split("/").slice(1);
        const end = parts.pop();
        return { segs: parts, exact: end === "?", included: r.included };
      });
      return leaves(d).filter((path) => {
        if (path.length === 1 && (path[0] === "id" || path[0] === "_ts")) return true;
        const covering = rules.filter(
          (r) =>
            (r.exact ? path.length === r.segs.length : path.length >= r.segs.length) &&
            r.segs.every((s, i) => s === path[i]),
        );
        covering.sort(
          (x, y) =>
            y.segs.length - x.segs.length ||
            Number(y.exact) - Number(x.exact) ||
            Number(x.included) - Number(y.included),
        );
        return covering[0]?.included ?? false;
      }).length;
    };
    fc.assert(
      fc.property(policy, doc, (pol, d) => {
        const n = countIndexedPaths(pol, d);
        expect(n).toBe(reference(pol, d));
        expect(n).toBeGreaterThanOrEqual(0);
        expect(n).toBeLessThanOrEqual(countLeafPaths(d));
      }),
      { seed: SEED, numRuns: 2_000 },
    );
  });
});
