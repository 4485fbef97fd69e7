import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../../bench/lib/prng.js";
import {
  EPK_MAX,
  EPK_MIN,
  effectivePartitionKey,
  initialBoundaries,
  type PartitionKeyComponent,
  type PartitionKeyDefinitionLike,
  prefixEpkRange,
  splitPoint,
} from "../../packages/emulator/src/partitioning/epk.js";

const V1: PartitionKeyDefinitionLike = { paths: ["/pk"], kind: "Hash" };
const V1_NO_KIND: PartitionKeyDefinitionLike = { paths: ["/pk"] };
const V2: PartitionKeyDefinitionLike = { paths: ["/pk"], kind: "Hash", version: 2 };
const MH2: PartitionKeyDefinitionLike = { paths: ["/a", "/b"], kind: "MultiHash", version: 2 };
const MH3: PartitionKeyDefinitionLike = { paths: ["/a", "/b", "/c"], kind: "MultiHash", version: 2 };

// The SDK's own implementation, loaded by absolute path (not an exported entry point).
const require = createRequire(import.meta.url);
const sdkHashPath = path.join(path.dirname(require.resolve("@azure/cosmos")), "utils/hashing/hash.js");
const sdk = require(sdkHashPath) as {
  hashPartitionKey(values: PartitionKeyComponent[], def: PartitionKeyDefinitionLike): string;
};

function randomString(r: () => number): string {
  const lenClass = r();
  const len =
    lenClass < 0.1
      ? 0
      : lenClass < 0.6
        ? Math.floor(r() * 20)
        : lenClass < 0.8
          ? 95 + Math.floor(r() * 10)
          : 100 + Math.floor(r() * 200);
  let s = "";
  for (let i = 0; i < len; i++) {
    const c = r();
    if (c < 0.5) s += String.fromCharCode(0x20 + Math.floor(r() * 95));
    else if (c < 0.6)
      s += String.fromCharCode(Math.floor(r() * 0x20)); // controls incl. NUL
    else if (c < 0.75)
      s += String.fromCharCode(0x80 + Math.floor(r() * 0x780)); // 2-byte
    else if (c < 0.88)
      s += String.fromCharCode(0x800 + Math.floor(r() * 0xd000)); // 3-byte (incl. surrogates)
    else if (c < 0.97)
      s += String.fromCodePoint(0x10000 + Math.floor(r() * 0xfffff)); // astral pair
    else s += String.fromCharCode(0xd800 + Math.floor(r() * 0x800)); // lone surrogate
  }
  return s;
}

const SPECIAL_NUMBERS = [
  0,
  -0,
  1,
  -1,
  2,
  -2,
  0.5,
  131072,
  -131072,
  2 ** 33,
  2 ** -15,
  2 ** 31,
  2 ** 32 - 1,
  Number.MAX_SAFE_INTEGER,
  Number.MIN_SAFE_INTEGER,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MIN_VALUE,
  -Number.MIN_VALUE,
  Number.EPSILON,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  1e21,
  -1e-300,
];

function randomNumber(r: () => number): number {
  const c = r();
  if (c < 0.15) return SPECIAL_NUMBERS[Math.floor(r() * SPECIAL_NUMBERS.length)];
  if (c < 0.45) return Math.floor(r() * 2000) - 1000;
  if (c < 0.6) return Math.floor((r() - 0.5) * 2 ** 53);
  if (c < 0.8) return (r() - 0.5) * 10 ** Math.floor(r() * 40 - 20);
  const f = new Float64Array(1);
  const u = new Uint32Array(f.buffer);
  u[0] = Math.floor(r() * 2 ** 32);
  u[1] = Math.floor(r() * 2 ** 32);
  return Number.isNaN(f[0]) ? 3.25 : f[0];
}

function randomComponent(r: () => number): PartitionKeyComponent {
  const c = r();
  if (c < 0.5) return randomString(r);
  if (c < 0.8) return randomNumber(r);
  if (c < 0.88) return r() < 0.5;
  if (c < 0.94) return null;
  return {};
}

const hexOf = (s: string) => /^[0-9A-F]*$/.test(s);

/** n distinct keys (unique strings and numbers) so that EPK counts measure the hash distribution. */
function distinctKeys(n: number, seed: number): PartitionKeyComponent[] {
  const r = seededRandom(seed);
  const keys: PartitionKeyComponent[] = [];
  for (let i = 0; i < n; i++) keys.push(r() < 0.7 ? `${i}:${randomString(r)}` : i * 1.5 - n);
  return keys;
}

describe("effectivePartitionKey: official vectors", () => {
  const vectors: [PartitionKeyComponent, string, string][] = [
    ["redmond", "22E342F38A486A088463DFF7838A5963", "05C1EFE313830C087366656E706F6500"],
    ["", "32E9366E637A71B4E710384B2F4970A0", "05C1CF33970FF80800"],
    [5, "19C08621B135968252FB34B4CF66F811", "05C1D9C1C5517C05C014"],
    [null, "378867E4430E67857ACE5C908374FE16", "05C1ED45D7475601"],
    [{}, "11622DAA78F835834610ABE56EFF5CB5", "05C1D529E345DC00"],
  ];
  for (const [value, v2, v1] of vectors) {
    it(`${JSON.stringify(value)}`, () => {
      expect(effectivePartitionKey([value], V2)).toBe(v2);
      expect(effectivePartitionKey([value], V1)).toBe(v1);
      expect(effectivePartitionKey([value], V1_NO_KIND)).toBe(v1);
    });
  }

  it("MultiHash is the concatenation of per-component V2 hashes", () => {
    expect(effectivePartitionKey(["redmond", 5], MH2)).toBe(
      "22E342F38A486A088463DFF7838A5963" + "19C08621B135968252FB34B4CF66F811",
    );
    expect(effectivePartitionKey(["redmond"], MH3)).toBe("22E342F38A486A088463DFF7838A5963");
  });

  it("rejects too many components and unknown kinds", () => {
    expect(() => effectivePartitionKey(["a", "b", "c"], MH2)).toThrow(RangeError);
    expect(() => effectivePartitionKey(["a", "b"], V2)).toThrow(RangeError);
    expect(() => effectivePartitionKey(["a"], { paths: ["/a"], kind: "Range" })).toThrow();
  });
});

describe("effectivePartitionKey: differential against the SDK's hashPartitionKey", () => {
  it("the SDK hashing module exists where expected", () => {
    expect(existsSync(sdkHashPath)).toBe(true);
    expect(sdk.hashPartitionKey(["redmond"], V2)).toBe("22E342F38A486A088463DFF7838A5963");
  });

  it("matches for ~2000 random single-component keys (V1 and V2)", () => {
    const r = seededRandom(0xc05);
    const values: PartitionKeyComponent[] = [...SPECIAL_NUMBERS, true, false, null, {}, "", "a".repeat(100)];
    values.push("a".repeat(101), "é".repeat(99), "😀".repeat(60), `${"x".repeat(99)}😀`);
    while (values.length < 2000) values.push(randomComponent(r));
    for (const v of values) {
      for (const def of [V1, V1_NO_KIND, V2]) {
        const mine = effectivePartitionKey([v], def);
        const theirs = sdk.hashPartitionKey([v], def);
        if (mine !== theirs) {
          expect({ v, def, mine }).toEqual({ v, def, mine: theirs });
        }
      }
    }
  });

  it("matches for ~2000 random MultiHash keys with 2-3 components, including prefixes", () => {
    const r = seededRandom(0xbeef);
    for (let i = 0; i < 2000; i++) {
      const def = r() < 0.5 ? MH2 : MH3;
      const n = 1 + Math.floor(r() * def.paths.length);
      const key: PartitionKeyComponent[] = [];
      for (let j = 0; j < n; j++) key.push(randomComponent(r));
      const mine = effectivePartitionKey(key, def);
      const theirs = sdk.hashPartitionKey(key, def);
      if (mine !== theirs) expect({ key, mine }).toEqual({ key, mine: theirs });
      expect(mine.length).toBe(32 * n);
    }
  });

  it("matches for multi-component V2 Hash keys and empty key lists (SDK semantics)", () => {
    expect(effectivePartitionKey([], V2)).toBe(sdk.hashPartitionKey([], V2));
    expect(effectivePartitionKey([], V1)).toBe(sdk.hashPartitionKey([], V1));
    expect(effectivePartitionKey([], MH2)).toBe("");
  });

  it("is stable across repeated calls (scratch buffers do not leak state)", () => {
    const long = "q".repeat(5000);
    const a = effectivePartitionKey([long], V2);
    effectivePartitionKey(["short"], V2);
    expect(effectivePartitionKey([long], V2)).toBe(a);
    expect(a).toBe(sdk.hashPartitionKey([long], V2));
  });
});

describe("prefixEpkRange", () => {
  it("returns [concat_k, concat_k + FF) for MultiHash prefixes and null otherwise", () => {
    const p = prefixEpkRange(["redmond"], MH3)!;
    expect(p).toEqual({ min: "22E342F38A486A088463DFF7838A5963", max: "22E342F38A486A088463DFF7838A5963FF" });
    const p2 = prefixEpkRange(["redmond", 5], MH3)!;
    expect(p2.min).toBe(effectivePartitionKey(["redmond", 5], MH3));
    expect(p2.max).toBe(`${p2.min}FF`);
    expect(prefixEpkRange(["redmond", 5, null], MH3)).toBeNull();
    expect(prefixEpkRange(["redmond", 5], MH2)).toBeNull();
    expect(prefixEpkRange(["redmond"], V2)).toBeNull();
    expect(prefixEpkRange(["redmond"], V1)).toBeNull();
    expect(prefixEpkRange([], MH2)).toEqual({ min: EPK_MIN, max: EPK_MAX });
  });

  it("contains every full key that extends the prefix, and no other", () => {
    const r = seededRandom(7);
    const prefix: PartitionKeyComponent[] = ["tenant-1"];
    const range = prefixEpkRange(prefix, MH3)!;
    for (let i = 0; i < 300; i++) {
      const full = [...prefix, randomComponent(r), randomComponent(r)];
      const epk = effectivePartitionKey(full, MH3);
      expect(epk >= range.min && epk < range.max).toBe(true);
      const other = effectivePartitionKey([randomString(r) || "x", randomComponent(r), 1], MH3);
      if (!other.startsWith(range.min)) expect(other >= range.min && other < range.max).toBe(false);
    }
  });
});

describe("initialBoundaries", () => {
  it("reproduces the service's V1 layouts", () => {
    expect(initialBoundaries(5, V1)).toEqual([
      "05C1C9CD673398",
      "05C1D9CD673398",
      "05C1E399CD6732",
      "05C1E9CD673398",
    ]);
    const six = initialBoundaries(6, V1_NO_KIND);
    expect(six.slice(0, 3)).toEqual(["05C1C5AB55AB50", "05C1D5AB55AB50", "05C1DFFFFFFFF8"]);
    expect(six).toHaveLength(5);
    expect(initialBoundaries(1, V1)).toEqual([]);
    expect(initialBoundaries(2, V1)).toEqual(["05C1E0"]);
  });

  it("splits the V2 / MultiHash used space [00, 40) evenly", () => {
    expect(initialBoundaries(4, V2)).toEqual(["10", "20", "30"]);
    expect(initialBoundaries(2, MH2)).toEqual(["20"]);
    expect(initialBoundaries(1, V2)).toEqual([]);
    expect(initialBoundaries(3, V2)).toEqual(["15555555", "2AAAAAAA"]);
  });

  it("is strictly ascending, inside the used space, and tiles keys evenly", () => {
    const keys = distinctKeys(4000, 99);
    for (const def of [V1, V2, MH2]) {
      for (const n of [1, 2, 3, 4, 5, 6, 7, 10, 16, 25, 64]) {
        const b = initialBoundaries(n, def);
        expect(b).toHaveLength(n - 1);
        const bounds = [EPK_MIN, ...b, EPK_MAX];
        for (let i = 0; i + 1 < bounds.length; i++) expect(bounds[i] < bounds[i + 1]).toBe(true);
        for (const x of b) {
          expect(hexOf(x) && x.length % 2 === 0).toBe(true);
          if (def === V1) expect(x.startsWith("05C1")).toBe(true);
          else expect(x >= "00" && x < "40").toBe(true);
        }
        if (n > 7) continue;
        const counts = new Array<number>(n).fill(0);
        for (const k of keys) {
          const epk = effectivePartitionKey(def === MH2 ? [k, 1] : [k], def);
          let i = 0;
          while (i < b.length && epk >= b[i]) i++;
          counts[i]++;
        }
        for (const c of counts) expect(c).toBeGreaterThan((keys.length / n) * 0.75);
      }
    }
  });
});

describe("splitPoint", () => {
  it("splits the whole space inside the used space", () => {
    expect(splitPoint(EPK_MIN, EPK_MAX, V1)).toBe("05C1E0");
    expect(splitPoint(EPK_MIN, EPK_MAX, V2)).toBe("20");
    expect(splitPoint(EPK_MIN, EPK_MAX, MH3)).toBe("20");
    expect(splitPoint("20", EPK_MAX, V2)).toBe("30");
    expect(splitPoint(EPK_MIN, "10", V2)).toBe("08");
  });

  it("splits V1 ranges in hash space, consistent with initialBoundaries", () => {
    const [b1, b2] = initialBoundaries(5, V1);
    const mid = splitPoint(b1, b2, V1);
    expect(mid > b1 && mid < b2).toBe(true);
    // hashes 858993459 .. 1717986918 -> midpoint hash 1288490188 (initialBoundaries(10)[2] is 1288490187)
    expect(mid).toBe("05C1D399CD6730");
    expect(initialBoundaries(10, V1)[2]).toBe("05C1D399CD672C");
  });

  it("keeps both halves populated and balanced under repeated splits", () => {
    const keys = distinctKeys(6000, 1234);
    for (const def of [V1, V2, MH2]) {
      const epks = keys.map((k) => effectivePartitionKey(def === MH2 ? [k, "x"] : [k], def));
      let ranges = [{ min: EPK_MIN, max: EPK_MAX }];
      for (let round = 0; round < 12; round++) {
        const inRange = (rg: { min: string; max: string }) => epks.filter((e) => e >= rg.min && e < rg.max);
        // split the fullest range
        let best = 0;
        let bestCount = -1;
        ranges.forEach((rg, i) => {
          const c = inRange(rg).length;
          if (c > bestCount) {
            best = i;
            bestCount = c;
          }
        });
        const rg = ranges[best];
        const m = splitPoint(rg.min, rg.max, def);
        expect(m > rg.min && m < rg.max).toBe(true);
        const left = inRange({ min: rg.min, max: m }).length;
        const right = inRange({ min: m, max: rg.max }).length;
        expect(left + right).toBe(bestCount);
        expect(left).toBeGreaterThan(bestCount * 0.3);
        expect(right).toBeGreaterThan(bestCount * 0.3);
        ranges = [
          ...ranges.slice(0, best),
          { min: rg.min, max: m },
          { min: m, max: rg.max },
          ...ranges.slice(best + 1),
        ];
      }
    }
  });

  it("returns a point strictly inside arbitrary ranges", () => {
    const r = seededRandom(42);
    const randHex = () => {
      let s = "";
      const n = 1 + Math.floor(r() * 20);
      for (let i = 0; i < n; i++)
        s += Math.floor(r() * 256)
          .toString(16)
          .toUpperCase()
          .padStart(2, "0");
      return s;
    };
    const cases: [string, string][] = [
      ["05C1E0", "05C1E00001"],
      ["05C1E0", "05C1E001"],
      ["3FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", EPK_MAX],
      [EPK_MIN, "00000000000000000000000000000001"],
      ["50", EPK_MAX],
      [EPK_MIN, "0580"],
      ["06", EPK_MAX],
      [effectivePartitionKey(["b"], V1), effectivePartitionKey(["a"], V1)], // "b" hashes lower than "a"
      [effectivePartitionKey(["a"], MH2), `${effectivePartitionKey(["a"], MH2)}FF`],
    ];
    for (let i = 0; i < 500; i++) {
      let a = r() < 0.1 ? EPK_MIN : randHex();
      let b = r() < 0.1 ? EPK_MAX : randHex();
      if (a === b) continue;
      if (a > b) [a, b] = [b, a];
      if (/^0*$/.test(b.slice(a.length)) && b.startsWith(a)) continue; // nothing lies strictly between
      cases.push([a, b]);
    }
    for (const [a, b] of cases) {
      for (const def of [V1, V2, MH2]) {
        const m = splitPoint(a, b, def);
        expect(hexOf(m)).toBe(true);
        if (!(m > a && m < b)) expect({ a, b, m }).toBe("strictly inside");
      }
    }
  });

  it("rejects empty ranges", () => {
    expect(() => splitPoint("20", "20", V2)).toThrow(RangeError);
    expect(() => splitPoint("10", "1000", V2)).toThrow(RangeError);
  });
});
