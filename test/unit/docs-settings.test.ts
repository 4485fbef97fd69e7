/**
 * Every knob a doc lists comes from code: each settings table names exactly the settings of its module, with the
 * module's unit and default, and the dashboard's refresh interval in the prose is the code's (and the page's own
 * status line shows it the same way).
 */
import { describe, expect, it } from "vitest";
import { interval } from "../../packages/devhost/src/dashboard/client/format.js";
import { DASHBOARD_SETTINGS } from "../../packages/devhost/src/dashboard/settings.js";
import { DURABLE_HUB_SETTINGS } from "../../packages/devhost/src/durable/settings.js";
import { DEV_HTTP_SETTINGS } from "../../packages/devhost/src/http/settings.js";
import { SETTINGS } from "../../src/shared/settings.js";
import { plain, readDoc, tableRows } from "../support/markdown.js";

interface Knob {
  setting: string;
  unit: string;
  default: number | string | boolean;
}

/** `{setting → [unit, default]}` of a doc table (unit column optional), cells without backticks. */
function documented(rows: string[][], unitColumn: boolean): Map<string, { unit?: string; default: string }> {
  const out = new Map<string, { unit?: string; default: string }>();
  for (const r of rows) {
    const name = plain(r[0]);
    expect(out.has(name), `${name} is listed twice`).toBe(false);
    out.set(name, unitColumn ? { unit: plain(r[1]), default: plain(r[2]) } : { default: plain(r[1]) });
  }
  return out;
}

function expectTableMatches(
  doc: Map<string, { unit?: string; default: string }>,
  knobs: readonly Knob[],
  unitColumn: boolean,
) {
  expect([...doc.keys()].sort()).toEqual(knobs.map((k) => k.setting).sort());
  for (const k of knobs) {
    const row = doc.get(k.setting);
    expect(row?.default, `${k.setting}'s default`).toBe(String(k.default));
    if (unitColumn) expect(row?.unit?.toLowerCase(), `${k.setting}'s unit`).toBe(k.unit.toLowerCase());
  }
}

describe("docs/app.md's settings table", () => {
  it("lists every setting of src/shared/settings.ts, with its unit and default, and nothing else", () => {
    const rows = tableRows(readDoc("docs/app.md"), ["app setting", "unit", "default", "what"]);
    expectTableMatches(documented(rows, true), Object.values(SETTINGS), true);
  });
});

describe("docs/dashboard.md", () => {
  it("its knobs table lists every dashboard setting, with its unit and default, and nothing else", () => {
    const rows = tableRows(readDoc("docs/dashboard.md"), ["app setting", "unit", "default", "meaning"]);
    expectTableMatches(documented(rows, true), Object.values(DASHBOARD_SETTINGS), true);
  });

  it("states the code's refresh interval, as the page's status line shows it", () => {
    const doc = readDoc("docs/dashboard.md");
    const shown = interval(DASHBOARD_SETTINGS.pollIntervalMs.default);
    expect(shown).toBe(`${DASHBOARD_SETTINGS.pollIntervalMs.default / 1000} s`);
    const stated = [...doc.matchAll(/(?:refreshed every|the defaults \(a refresh per) ([\d.]+ m?s)\b/g)].map(
      (m) => m[1],
    );
    expect(stated.length).toBeGreaterThanOrEqual(2);
    expect(new Set(stated)).toEqual(new Set([shown]));
  });
});

describe("docs/durable.md's timing knobs", () => {
  it("lists every task hub setting with its default, and nothing else", () => {
    const rows = tableRows(readDoc("docs/durable.md"), ["setting", "default", "what"]);
    expectTableMatches(documented(rows, false), Object.values(DURABLE_HUB_SETTINGS), false);
  });
});

describe("docs/devhost.md's front door knobs", () => {
  it("lists every HTTP setting of the dev host, with its unit and default, and nothing else", () => {
    const rows = tableRows(readDoc("docs/devhost.md"), ["app setting", "unit", "default", "meaning"]);
    expectTableMatches(documented(rows, true), Object.values(DEV_HTTP_SETTINGS), true);
  });
});

describe("the page's interval text", () => {
  it("shows a configured interval as set, not rounded", () => {
    expect(interval(1500)).toBe("1.5 s");
    expect(interval(2000)).toBe("2 s");
    expect(interval(1250)).toBe("1.25 s");
    expect(interval(250)).toBe("250 ms");
  });
});
