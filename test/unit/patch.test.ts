import { describe, expect, it } from "vitest";
import { CosmosError } from "../../packages/emulator/src/errors.js";
import { applyPatch, parsePatchRequest } from "../../packages/emulator/src/store/patch.js";

describe("patch operations", () => {
  const doc = { id: "a", n: 1, tags: ["x", "y"], nested: { v: 1 } };

  it("applies add/set/replace/remove/incr/move without touching the input", () => {
    const out = applyPatch(doc, [
      { op: "add", path: "/tags/1", value: "between" },
      { op: "add", path: "/tags/-", value: "end" },
      { op: "set", path: "/nested/w", value: 2 },
      { op: "replace", path: "/n", value: 10 },
      { op: "incr", path: "/count", value: 3 },
      { op: "incr", path: "/n", value: -4 },
      { op: "remove", path: "/nested/v" },
      { op: "move", from: "/nested", path: "/moved" },
    ]);
    expect(out).toEqual({ id: "a", n: 6, tags: ["x", "between", "y", "end"], count: 3, moved: { w: 2 } });
    expect(doc).toEqual({ id: "a", n: 1, tags: ["x", "y"], nested: { v: 1 } });
  });

  it("rejects replace/remove of a missing path, incr of a non-number and out-of-bounds indexes", () => {
    for (const op of [
      { op: "replace" as const, path: "/missing", value: 1 },
      { op: "remove" as const, path: "/missing" },
      { op: "incr" as const, path: "/tags", value: 1 },
      { op: "add" as const, path: "/tags/5", value: 1 },
    ]) {
      expect(() => applyPatch(doc, [op])).toThrow(CosmosError);
    }
  });

  it("validates the request shape", () => {
    expect(parsePatchRequest([{ op: "set", path: "/a", value: 1 }]).operations).toHaveLength(1);
    expect(() => parsePatchRequest({ operations: [] })).toThrow(/no operations/);
    expect(() => parsePatchRequest([{ op: "explode", path: "/a" }])).toThrow(/Unknown patch operation/);
    expect(() => parsePatchRequest([{ op: "set", path: "a", value: 1 }])).toThrow(/JSON pointer/);
    expect(() =>
      parsePatchRequest(Array.from({ length: 11 }, () => ({ op: "set", path: "/a", value: 1 }))),
    ).toThrow(/at most 10/);
  });
});
