import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BinaryJsonError, decodeCosmosBinary } from "../../packages/emulator/src/binary-json/decode.js";
import { CosmosError } from "../../packages/emulator/src/errors.js";
import { MAX_DECODED_BINARY_CHARS, parseJsonBody } from "../../packages/emulator/src/json.js";

/*
 * The decoder of Cosmos binary JSON against bytes Microsoft's code wrote: test/fixtures/cosmos-binary/vectors.ndjson
 * is the output of `dotnet interop/dotnet/bin/Release/net10.0/CosmosInterop.dll binary-vectors '{}'` (after
 * `npm run interop:build`; interop/dotnet/BinaryVectors.cs): each line a document as the .NET SDK 3.64.0 writes it
 * with AZURE_COSMOS_BINARY_ENCODING_ENABLED (`hex`), and the SDK's own reading of those bytes (`json`).
 */

interface Vector {
  name: string;
  writer: "stream" | "typed" | "options";
  hex: string;
  json: string;
}

const VECTORS: Vector[] = readFileSync(
  new URL("../fixtures/cosmos-binary/vectors.ndjson", import.meta.url),
  "utf8",
)
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => JSON.parse(l) as Vector);

const LIMITS = { maxDepth: 131, maxChars: MAX_DECODED_BINARY_CHARS };
const decode = (bytes: Uint8Array | number[], limits = LIMITS): unknown =>
  decodeCosmosBinary(Uint8Array.from(bytes), limits);

function refusal(bytes: number[]): BinaryJsonError {
  try {
    decode(bytes);
  } catch (e) {
    if (e instanceof BinaryJsonError) return e;
    throw e;
  }
  throw new Error(`decoded ${JSON.stringify(bytes)} without an error`);
}

describe("Cosmos binary JSON written by the .NET SDK", () => {
  it("the fixture covers every writer and the markers the SDK writes", () => {
    expect(new Set(VECTORS.map((v) => v.writer))).toEqual(new Set(["stream", "typed", "options"]));
    // Markers seen across the vectors: reference strings, packed/compressed, GUID and base64 strings, LC containers,
    // uniform number arrays and their nested form, 4-byte lengths, the extended Int16 of a .NET short.
    const all = VECTORS.map((v) => v.hex).join("");
    for (const marker of [
      "c3",
      "c4",
      "c5",
      "75",
      "76",
      "77",
      "78",
      "79",
      "7a",
      "7b",
      "7c",
      "7d",
      "7e",
      "7f",
      "71",
    ]) {
      expect(all, `marker ${marker}`).toContain(marker);
    }
    expect(VECTORS.some((v) => v.hex.startsWith("80ec") || v.hex.includes("c2"))).toBe(true);
    expect(VECTORS.some((v) => v.hex.includes("f0d7") || v.hex.includes("f0d8"))).toBe(true);
    expect(VECTORS.some((v) => v.hex.includes("f2f0"))).toBe(true);
    expect(VECTORS.some((v) => v.hex.includes("f3f1"))).toBe(true);
  });

  for (const v of VECTORS) {
    it(`${v.name} (${v.writer} writer) decodes as the SDK reads it`, () => {
      expect(decode(Buffer.from(v.hex, "hex"))).toEqual(JSON.parse(v.json));
    });
  }

  it("a .NET short is written as the extended Int16 marker and read as a number", () => {
    const typed = VECTORS.find((v) => v.writer === "typed")!;
    expect(typed.hex).toContain("d92efb"); // -1234 as Int16
    expect((decode(Buffer.from(typed.hex, "hex")) as { small: number }).small).toBe(-1234);
  });

  it("parseJsonBody gives a binary body the same value as its text", () => {
    const v = VECTORS.find((x) => x.name === "repeated names and values" && x.writer === "stream")!;
    expect(parseJsonBody(Buffer.from(v.hex, "hex"))).toEqual(JSON.parse(v.json));
  });
});

describe("malformed Cosmos binary JSON is refused with the reason and offset", () => {
  it("truncated: the body ends inside a value", () => {
    const e = refusal([0x80, 0xea, 0x05, 0x81, 0x61]);
    expect(e.message).toMatch(/runs past the end|ends .* before/);
  });

  it("nothing after the format byte", () => {
    expect(refusal([0x80]).message).toMatch(/ends 1 byte\(s\) before the value/);
  });

  it("bytes after the value", () => {
    expect(refusal([0x80, 0xe8, 0x00]).message).toMatch(/1 byte\(s\) after the value at byte 2/);
  });

  it("an unknown marker", () => {
    expect(refusal([0x80, 0xe1, 0xf8]).message).toMatch(/unknown type marker 0xf8 at byte 2/);
  });

  it("a count that does not match the items", () => {
    expect(refusal([0x80, 0xe5, 0x02, 0x05, 0x01, 0x02]).message).toMatch(
      /says it holds 5 items but holds 2/,
    );
  });

  it("a property name that is not a string", () => {
    expect(refusal([0x80, 0xe9, 0x01, 0x02]).message).toMatch(/property name that is not a string at byte 2/);
  });

  it("a string reference to where no string is, or to another reference", () => {
    expect(refusal([0x80, 0xe1, 0xc3, 0x01]).message).toMatch(/reference to offset 1/);
    expect(refusal([0x80, 0xe2, 0x04, 0xc3, 0x03, 0xc3, 0x03]).message).toMatch(/reference to offset 3/);
  });

  it("a string that is not UTF-8", () => {
    expect(refusal([0x80, 0x82, 0xc3, 0x28]).message).toMatch(/not valid UTF-8/);
  });

  it("NaN, which JSON cannot carry", () => {
    expect(refusal([0x80, 0xcc, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f]).message).toMatch(/the number NaN/);
  });

  it("a user-dictionary string", () => {
    expect(refusal([0x80, 0x40]).message).toMatch(/user-dictionary string/);
  });

  it("nesting past the limit, without recursing through it", () => {
    const deep = [0x80, ...new Array<number>(100_000).fill(0xe1), 0x00];
    expect(refusal(deep).message).toMatch(/nested more than 131 deep at byte 132/);
    expect(decode([0x80, ...new Array<number>(131).fill(0xe1), 0x00])).toBeDefined();
  });

  it("strings decoding past the budget (references multiply a string)", () => {
    // One 61-character string (at offset 6), then 1,000 references to it: 61 + 1000 × 61 characters.
    const s = [0xbd, ...new Array<number>(61).fill(0x61)];
    const refs = new Array<number>(1000).fill(0).flatMap(() => [0xc3, 0x06]);
    const body = [0x80, 0xe4, ...le32(s.length + refs.length), ...s, ...refs];
    expect(() => decode(body, { maxDepth: 131, maxChars: 61 * 1001 })).not.toThrow();
    const e = (() => {
      try {
        decode(body, { maxDepth: 131, maxChars: 61 * 1000 });
      } catch (x) {
        return x as BinaryJsonError;
      }
    })();
    expect(e?.tooLarge).toBe(true);
  });

  it("parseJsonBody answers a malformed binary body with a 400 that says what is wrong", () => {
    try {
      parseJsonBody(Buffer.from([0x80, 0xea, 0x05, 0x81]));
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(CosmosError);
      expect((e as CosmosError).status).toBe(400);
      expect((e as CosmosError).message).toMatch(
        /^The request body is not valid Cosmos binary JSON: .* at byte \d+\.$/,
      );
    }
  });
});

describe("decoded values are what JSON.parse gives for the same document", () => {
  it("keeps a string's leading U+FEFF (TextDecoder would drop it as a byte order mark)", () => {
    expect(decode([0x80, 0x84, 0xef, 0xbb, 0xbf, 0x78])).toBe("\ufeffx");
  });

  it("keeps __proto__ an own property, as JSON.parse does", () => {
    const v = decode([0x80, 0xe9, 0x89, ...Buffer.from("__proto__"), 0x01]) as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(["__proto__"]);
    expect(v).toEqual(JSON.parse('{"__proto__":1}'));
  });
});

function le32(n: number): number[] {
  return [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff];
}
