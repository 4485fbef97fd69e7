import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CronExpression,
  cronMatches,
  nextCronOccurrence,
  nextOccurrence,
  parseNcrontab,
  parseTimerSchedule,
  TimerScheduleError,
} from "../../packages/devhost/src/timer/ncrontab.js";

const at = (s: string) => Date.parse(s);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

describe("NCRONTAB parsing", () => {
  it("reads six fields with lists, ranges, steps and names", () => {
    const c = parseNcrontab("0,30 */15 9-17/4 1,15 Jan-MAR,dec mon-Fri");
    expect(c.seconds.flatMap((on, i) => (on ? [i] : []))).toEqual([0, 30]);
    expect(c.minutes.flatMap((on, i) => (on ? [i] : []))).toEqual([0, 15, 30, 45]);
    expect(c.hours.flatMap((on, i) => (on ? [i] : []))).toEqual([9, 13, 17]);
    expect(c.days.flatMap((on, i) => (on ? [i] : []))).toEqual([1, 15]);
    expect(c.months.flatMap((on, i) => (on ? [i] : []))).toEqual([1, 2, 3, 12]);
    expect(c.daysOfWeek.flatMap((on, i) => (on ? [i] : []))).toEqual([1, 2, 3, 4, 5]);
    expect(c.isInterval).toBe(true);
  });

  it("reads `a/n` as from a to the end, full names, and five fields as second 0", () => {
    const c = parseNcrontab("5/20 0 0 * september sunday");
    expect(c.seconds.flatMap((on, i) => (on ? [i] : []))).toEqual([5, 25, 45]);
    expect(c.months[9]).toBe(true);
    expect(c.daysOfWeek.flatMap((on, i) => (on ? [i] : []))).toEqual([0]);
    const five = parseNcrontab("30 9 * * 1");
    expect(five.seconds.flatMap((on, i) => (on ? [i] : []))).toEqual([0]);
    expect(five.minutes[30]).toBe(true);
    expect(five.isInterval).toBe(false);
    // NCrontab swaps a backwards range and reads step 0 as 1.
    expect(parseNcrontab("0 30-10 * * * *").minutes.flatMap((on, i) => (on ? [i] : []))).toHaveLength(21);
    expect(parseNcrontab("*/0 * * * * *").seconds.every(Boolean)).toBe(true);
    // NCrontab takes any prefix; the first name it starts wins.
    const prefixes = parseNcrontab("0 0 0 * J,Ju,s t");
    expect(prefixes.months.flatMap((on, i) => (on ? [i] : []))).toEqual([1, 6, 9]);
    expect(prefixes.daysOfWeek.flatMap((on, i) => (on ? [i] : []))).toEqual([2]);
  });

  it.each([
    ["0 0 * * *  * *", /six fields/],
    ["60 * * * * *", /second field value 60 is outside 0-59/],
    ["0 0 24 * * *", /hour field value 24/],
    ["0 0 0 0 * *", /day field value 0/],
    ["0 0 0 * 13 *", /month field value 13/],
    ["0 0 0 * * 7", /day-of-week field value 7 is outside 0-6/],
    ["*/x * * * * *", /step 'x'/],
    ["0 0 0 * Jx *", /'Jx'/],
    ["0 0 0 1,,2 * *", /empty item/],
    ["0 0 0 30 2 *", /never occurs/],
    ["0 0 0 * * x", /'x'/],
  ])("refuses %s", (expr, message) => {
    expect(() => parseNcrontab(expr)).toThrowError(TimerScheduleError);
    expect(() => parseNcrontab(expr)).toThrowError(message);
  });

  it("takes a one-field schedule as a TimeSpan (hh:mm:ss, d.hh:mm:ss), refusing nonsense", () => {
    expect(parseTimerSchedule("00:05:00")).toMatchObject({ kind: "constant", intervalMs: 300_000 });
    expect(parseTimerSchedule("1.02:00:00")).toMatchObject({ kind: "constant", intervalMs: 26 * 3_600_000 });
    expect(parseTimerSchedule("0 */5 * * * *").kind).toBe("cron");
    expect(() => parseTimerSchedule("00:00:00")).toThrowError(/positive TimeSpan/);
    expect(() => parseTimerSchedule("every minute")).toThrowError(/six fields/);
    expect(() => parseTimerSchedule("25:00:00")).toThrowError(/neither/);
    expect(() => parseTimerSchedule("")).toThrowError(/needs a 'schedule'/);
  });
});

describe("next occurrence", () => {
  it("finds known next times (UTC)", () => {
    const weekdays = parseNcrontab("0 30 9 * * 1-5");
    // Friday 2026-11-27 10:00 → Monday 09:30.
    expect(iso(nextCronOccurrence(weekdays, at("2026-11-27T10:00:00Z")))).toBe("2026-11-30T09:30:00.000Z");
    // Strictly after: exactly at an occurrence gives the following one.
    expect(iso(nextCronOccurrence(weekdays, at("2026-11-30T09:30:00Z")))).toBe("2026-12-01T09:30:00.000Z");
    expect(iso(nextCronOccurrence(parseNcrontab("*/10 * * * * *"), at("2026-01-01T00:00:09.500Z")))).toBe(
      "2026-01-01T00:00:10.000Z",
    );
    // Leap day.
    expect(iso(nextCronOccurrence(parseNcrontab("0 0 12 29 Feb *"), at("2026-03-01T00:00:00Z")))).toBe(
      "2028-02-29T12:00:00.000Z",
    );
    // Day AND day-of-week (NCrontab), not OR: the next Friday the 13th after 2026-03-14 is 2026-11-13.
    expect(iso(nextCronOccurrence(parseNcrontab("0 0 0 13 * Fri"), at("2026-03-14T00:00:00Z")))).toBe(
      "2026-11-13T00:00:00.000Z",
    );
    // New year rollover.
    expect(iso(nextCronOccurrence(parseNcrontab("0 0 0 1 1 *"), at("2026-06-01T00:00:00Z")))).toBe(
      "2027-01-01T00:00:00.000Z",
    );
  });

  it("a TimeSpan schedule counts from the given time", () => {
    expect(nextOccurrence(parseTimerSchedule("00:00:30"), 1_000)).toBe(31_000);
  });

  it("local time follows TZ's wall clock", () => {
    // The process TZ may be anything: check against the wall fields that zone gives.
    const c = parseNcrontab("0 0 3 * * *");
    const next = nextCronOccurrence(c, at("2026-05-10T12:00:00Z"), "local") as number;
    const d = new Date(next);
    expect([d.getHours(), d.getMinutes(), d.getSeconds()]).toEqual([3, 0, 0]);
    expect(next - at("2026-05-10T12:00:00Z")).toBeLessThanOrEqual(36 * 3_600_000);
  });

  /** The reference: try every day in order, then every second of a matching day. */
  function bruteForceNext(c: CronExpression, after: number, days: number): number | undefined {
    const start = Math.floor(after / 1000) * 1000 + 1000;
    const dayStart = Math.floor(start / 86_400_000) * 86_400_000;
    for (let d = 0; d < days; d++) {
      const day = dayStart + d * 86_400_000;
      const probe = new Date(day);
      if (
        !c.months[probe.getUTCMonth() + 1] ||
        !c.days[probe.getUTCDate()] ||
        !c.daysOfWeek[probe.getUTCDay()]
      )
        continue;
      for (let s = Math.max(day, start); s < day + 86_400_000; s += 1000) {
        if (cronMatches(c, s)) return s;
      }
    }
    return undefined;
  }

  const field = (min: number, max: number, names?: string[]) => {
    const value = fc.integer({ min, max });
    const name = names ? fc.constantFrom(...names) : value.map(String);
    const item = fc.oneof(
      fc.constant("*"),
      value.map(String),
      name,
      fc.tuple(value, value).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
      fc.tuple(fc.integer({ min: 1, max: Math.max(1, max - min) })).map(([s]) => `*/${s}`),
      fc
        .tuple(value, value, fc.integer({ min: 1, max: 10 }))
        .map(([a, b, s]) => `${Math.min(a, b)}-${Math.max(a, b)}/${s}`),
      fc.tuple(value, fc.integer({ min: 1, max: 20 })).map(([a, s]) => `${a}/${s}`),
    );
    return fc.array(item, { minLength: 1, maxLength: 3 }).map((items) => items.join(","));
  };
  const expression = fc
    .tuple(
      field(0, 59),
      field(0, 59),
      field(0, 23),
      field(1, 31),
      field(1, 12, ["Jan", "feb", "MAR", "Apr", "may", "Jun", "jul", "aug", "Sep", "oct", "Nov", "dec"]),
      field(0, 6, ["Sun", "mon", "TUE", "wed", "Thu", "fri", "sat"]),
    )
    .map((f) => f.join(" "));

  it("matches a brute-force search on random expressions and start times (fixed seed)", () => {
    const HORIZON_DAYS = 800;
    fc.assert(
      fc.property(
        expression,
        fc.integer({ min: at("2020-01-01T00:00:00Z"), max: at("2030-12-31T00:00:00Z") }),
        (expr, after) => {
          let c: CronExpression;
          try {
            c = parseNcrontab(expr);
          } catch (e) {
            // Only "never occurs" is allowed to refuse a generated expression.
            expect((e as Error).message).toMatch(/never occurs/);
            return;
          }
          const fast = nextCronOccurrence(c, after);
          const slow = bruteForceNext(c, after, HORIZON_DAYS);
          if (slow !== undefined) expect(iso(fast)).toBe(iso(slow));
          else if (fast !== undefined) expect(fast - after).toBeGreaterThan((HORIZON_DAYS - 1) * 86_400_000);
          if (fast !== undefined) {
            expect(cronMatches(c, fast)).toBe(true);
            expect(fast).toBeGreaterThan(after);
          }
        },
      ),
      { seed: 20261123, numRuns: 300 },
    );
  });
});
