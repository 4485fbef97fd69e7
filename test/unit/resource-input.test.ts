import { describe, expect, it } from "vitest";
import { jsonNestingDepth } from "../../packages/core/src/json.js";
import {
  ApiError,
  applyMergePatch,
  decodeSkipToken,
  encodeSkipToken,
  MAX_BODY_DEPTH,
  MAX_SKIP_TOKEN_CHARS,
  parseJsonObject,
} from "../../src/shared/resources/index.js";

// The API's input checks that need no database: body depth, the merge patch, the list's $skipToken.

/** `{"a":{"a":…1…}}` as text: `depth` objects. */
const nestedText = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

/** The same as a value, built without recursion. */
function nestedValue(depth: number, leaf: unknown = 1): Record<string, unknown> {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v as Record<string, unknown>;
}

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof ApiError) return `${e.statusCode} ${e.code}`;
    throw e;
  }
  return undefined;
}

describe("jsonNestingDepth", () => {
  it.each([
    ["1", 0],
    ['"{[{["', 0],
    ["{}", 1],
    ["[[],[[]]]", 3],
    ['{"a":"}}}{{{","b":[{}]}', 3],
    ['{"a":"\\"{{{"}', 1], // an escaped quote does not end the string
    ['{"a":"\\\\"}', 1], // an escaped backslash does
    ['["\\\\",[[]]]', 3],
  ])("%s → %i", (text, depth) => {
    expect(jsonNestingDepth(text)).toBe(depth);
  });

  it("measures 1,000,000 levels in one pass (no recursion to overflow)", () => {
    const n = 1_000_000;
    expect(jsonNestingDepth(`${"[".repeat(n)}${"]".repeat(n)}`)).toBe(n);
  });
});

describe("parseJsonObject depth bound", () => {
  const limit = 65_536;
  it(`accepts a body nested ${MAX_BODY_DEPTH} deep and refuses ${MAX_BODY_DEPTH + 1} with 400 BodyTooDeep`, () => {
    expect(parseJsonObject(nestedText(MAX_BODY_DEPTH), limit)).toEqual(nestedValue(MAX_BODY_DEPTH));
    expect(codeOf(() => parseJsonObject(nestedText(MAX_BODY_DEPTH + 1), limit))).toBe("400 BodyTooDeep");
  });

  it("refuses 9,000 levels (under the size limit) with BodyTooDeep, arrays as well as objects", () => {
    const text = nestedText(9_000);
    expect(text.length).toBeLessThan(limit);
    expect(codeOf(() => parseJsonObject(text, limit))).toBe("400 BodyTooDeep");
    const arrays = `{"tags":${"[".repeat(9_000)}${"]".repeat(9_000)}}`;
    expect(codeOf(() => parseJsonObject(arrays, limit))).toBe("400 BodyTooDeep");
  });

  it("leaves brackets inside strings alone", () => {
    const text = JSON.stringify({ properties: { description: "[".repeat(500) } });
    expect(parseJsonObject(text, limit)).toEqual(JSON.parse(text));
  });
});

describe("applyMergePatch (RFC 7396)", () => {
  // The test cases of RFC 7396 Appendix A (https://www.rfc-editor.org/rfc/rfc7396#appendix-A).
  it.each([
    [{ a: "b" }, { a: "c" }, { a: "c" }],
    [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
    [{ a: "b" }, { a: null }, {}],
    [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
    [{ a: ["b"] }, { a: "c" }, { a: "c" }],
    [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
    [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
    [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
    [
      ["a", "b"],
      ["c", "d"],
      ["c", "d"],
    ],
    [{ a: "b" }, ["c"], ["c"]],
    [{ a: "foo" }, null, null],
    [{ a: "foo" }, "bar", "bar"],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: "b", c: null }, { a: "b" }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])("%j + %j → %j", (target, patch, result) => {
    const before = JSON.stringify(target);
    expect(applyMergePatch(target, patch)).toEqual(result);
    expect(JSON.stringify(target)).toBe(before); // the target is not modified
  });

  it("merges a patch 100,000 levels deep into a target as deep without overflowing the stack", () => {
    const depth = 100_000;
    const merged = applyMergePatch(nestedValue(depth, { x: 1 }), nestedValue(depth, { y: 2 }));
    let v = merged as Record<string, unknown>;
    for (let i = 0; i < depth; i++) v = v.a as Record<string, unknown>;
    expect(v).toEqual({ x: 1, y: 2 });
  });

  it("treats __proto__ as a key, never as a prototype", () => {
    const patch = JSON.parse('{"tags":{"__proto__":{"polluted":true},"a":"1"}}');
    const merged = applyMergePatch({ tags: { b: "2" } }, patch) as { tags: Record<string, unknown> };
    expect(Object.getPrototypeOf(merged.tags)).toBe(Object.prototype);
    expect(Object.keys(merged.tags).sort()).toEqual(["__proto__", "a", "b"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("$skipToken", () => {
  const sub = "sub-1";
  const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64url");

  it("round-trips a continuation for its own subscription", () => {
    const continuation = '{"token":"+RID:~abc#RT:1","range":{"min":"","max":"FF"}}';
    expect(decodeSkipToken(encodeSkipToken(sub, continuation), sub)).toBe(continuation);
  });

  it.each([
    ["empty", ""],
    ["not base64url", "!!!!"],
    ["base64 with padding and '+'", "ab+/cd=="],
    ["non-canonical trailing bits", "QR"],
    ["base64 of non-JSON", b64("not a token")],
    ["invalid UTF-8", Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString("base64url")],
    ["JSON null", b64("null")],
    ["a JSON array", b64('["sub-1","x"]')],
    ["the wrong shape", b64('{"token":"x","range":{"min":"","max":"FF"}}')],
    ["a non-string continuation", b64('{"s":"sub-1","c":42}')],
    ["an extra field", b64('{"s":"sub-1","c":"x","z":1}')],
    ["another subscription's token", encodeSkipToken("sub-2", "x")],
    ["a NUL in the continuation", encodeSkipToken(sub, "a\u0000b")],
    ["a lone surrogate in the continuation", encodeSkipToken(sub, "a\ud800b")],
    ["non-ASCII in the continuation", encodeSkipToken(sub, "é")],
    ["an empty continuation", encodeSkipToken(sub, "")],
    ["one character too long", "A".repeat(MAX_SKIP_TOKEN_CHARS + 1)],
    ["huge", b64("x".repeat(100_000))],
  ])("%s → 400 InvalidSkipToken", (_label, token) => {
    expect(codeOf(() => decodeSkipToken(token, sub))).toBe("400 InvalidSkipToken");
  });

  it("random base64url strings are refused with InvalidSkipToken, never anything else", () => {
    // A fixed linear congruential sequence: the same 500 tokens every run.
    let seed = 19;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (let n = 0; n < 500; n++) {
      let token = "";
      const length = 1 + (n % 97);
      for (let i = 0; i < length; i++) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        token += alphabet[seed % 64];
      }
      expect(codeOf(() => decodeSkipToken(token, sub))).toBe("400 InvalidSkipToken");
    }
  });
});
