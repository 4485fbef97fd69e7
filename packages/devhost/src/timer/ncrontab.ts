import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { parseTimeSpan } from "../cosmos/retry.js";

/**
 * NCRONTAB as the Functions timer trigger reads it (NCrontab with IncludingSeconds when the expression does not
 * have exactly five fields): `{second} {minute} {hour} {day} {month} {day-of-week}`, or five fields without seconds
 * (second 0). Each field is a comma list of `*`, `n`, `a-b`, with an optional step `/s` (`*\/5`, `10-40/10`;
 * `5/15` = from 5 to the field's end). As NCrontab reads them: a backwards range is swapped, a step of 0 is 1,
 * months take names (January …) and days of week 0–6 (Sunday 0) or names (Sunday …) as any case-insensitive
 * prefix of the name (the first name it starts wins: "J" is January), and a date matches when its day, month AND
 * day-of-week all match (Vixie cron ORs day and day-of-week when both are restricted).
 */
export interface CronExpression {
  kind: "cron";
  expression: string;
  seconds: readonly boolean[];
  minutes: readonly boolean[];
  hours: readonly boolean[];
  /** Index 1–31. */
  days: readonly boolean[];
  /** Index 1–12. */
  months: readonly boolean[];
  /** Index 0–6, Sunday 0. */
  daysOfWeek: readonly boolean[];
  /** As CronSchedule.IsInterval: `*`, `/` or `-` in second, minute or hour (affects the default of useMonitor). */
  isInterval: boolean;
}

/** A TimeSpan schedule (`hh:mm:ss`): every interval since the previous occurrence (the host's ConstantSchedule). */
export interface ConstantSchedule {
  kind: "constant";
  expression: string;
  intervalMs: number;
}

export type TimerSchedule = CronExpression | ConstantSchedule;

/** A schedule that does not parse, or never occurs. */
export class TimerScheduleError extends CosmosFeedError {
  constructor(message: string) {
    super(message, { statusCode: 400 });
  }
}

const MONTHS = [
  "january",
  "february",
  "march",
  "april",
  "may",
  "june",
  "july",
  "august",
  "september",
  "october",
  "november",
  "december",
];
const DAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
}

const FIELDS: FieldSpec[] = [
  { name: "second", min: 0, max: 59 },
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: MONTHS },
  { name: "day-of-week", min: 0, max: 6, names: DAYS },
];

function parseValue(text: string, spec: FieldSpec, expression: string): number {
  const fail = (why: string) =>
    new TimerScheduleError(`Invalid NCRONTAB expression '${expression}': ${spec.name} field ${why}.`);
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    if (n < spec.min || n > spec.max) throw fail(`value ${n} is outside ${spec.min}-${spec.max}`);
    return n;
  }
  const lower = text.toLowerCase();
  if (spec.names) {
    // As NCrontab: any prefix of a name, the first name it starts wins ("J" = January, "Ju" = June).
    const i = spec.names.findIndex((n) => n.startsWith(lower));
    if (i >= 0) return i + spec.min;
  }
  throw fail(`has '${text}', which is not ${spec.names ? "a number or a name" : "a number"}`);
}

function parseField(text: string, spec: FieldSpec, expression: string): boolean[] {
  const set = new Array<boolean>(spec.max + 1).fill(false);
  for (const part of text.split(",")) {
    if (part === "") {
      throw new TimerScheduleError(
        `Invalid NCRONTAB expression '${expression}': empty item in the ${spec.name} field.`,
      );
    }
    const [range, stepText, extra] = part.split("/");
    if (extra !== undefined || range === undefined) {
      throw new TimerScheduleError(
        `Invalid NCRONTAB expression '${expression}': '${part}' in the ${spec.name} field.`,
      );
    }
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText)) {
        throw new TimerScheduleError(
          `Invalid NCRONTAB expression '${expression}': step '${stepText}' in the ${spec.name} field must be a number.`,
        );
      }
      // NCrontab reads a step below 1 as 1.
      step = Math.max(1, Number(stepText));
    }
    let first: number;
    let last: number;
    if (range === "*") {
      first = spec.min;
      last = spec.max;
    } else if (range.includes("-")) {
      const [a, b, more] = range.split("-");
      if (more !== undefined || a === undefined || b === undefined) {
        throw new TimerScheduleError(
          `Invalid NCRONTAB expression '${expression}': range '${range}' in the ${spec.name} field.`,
        );
      }
      first = parseValue(a, spec, expression);
      last = parseValue(b, spec, expression);
      // NCrontab swaps a backwards range (30-10 is 10-30).
      if (first > last) [first, last] = [last, first];
    } else {
      first = parseValue(range, spec, expression);
      last = stepText !== undefined ? spec.max : first;
    }
    for (let v = first; v <= last; v += step) set[v] = true;
  }
  return set;
}

const DAYS_IN_MONTH = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Parses a five- or six-field NCRONTAB expression. */
export function parseNcrontab(expression: string): CronExpression {
  if (typeof expression !== "string") throw new TimerScheduleError("A timer schedule must be a string.");
  let fields = expression.trim().split(/\s+/);
  if (fields.length === 5) fields = ["0", ...fields];
  if (fields.length !== 6) {
    throw new TimerScheduleError(
      `Invalid NCRONTAB expression '${expression}': expected six fields '{second} {minute} {hour} {day} {month} {day-of-week}' (or five without seconds); got ${fields.length}.`,
    );
  }
  const [seconds, minutes, hours, days, months, daysOfWeek] = fields.map((f, i) =>
    parseField(f, FIELDS[i] as FieldSpec, expression),
  ) as [boolean[], boolean[], boolean[], boolean[], boolean[], boolean[]];
  // A day that no chosen month has (e.g. 30 2) never occurs: the host would never run it.
  const possible = months.some((on, m) => on && days.some((d, day) => d && day <= (DAYS_IN_MONTH[m] ?? 0)));
  if (!possible) {
    throw new TimerScheduleError(
      `NCRONTAB expression '${expression}' never occurs (no chosen month has the chosen days).`,
    );
  }
  const isInterval = fields.slice(0, 3).some((f) => /[*/-]/.test(f));
  return { kind: "cron", expression, seconds, minutes, hours, days, months, daysOfWeek, isInterval };
}

/**
 * A timer trigger's schedule as TimerSchedule.Create reads it: an NCRONTAB expression, else a TimeSpan
 * (`hh:mm:ss`, `d.hh:mm:ss`). `%NAME%` must already be resolved.
 */
export function parseTimerSchedule(schedule: string): TimerSchedule {
  if (typeof schedule !== "string" || schedule.trim() === "") {
    throw new TimerScheduleError(
      "A timer trigger needs a 'schedule' (an NCRONTAB expression or a TimeSpan hh:mm:ss).",
    );
  }
  const fieldCount = schedule.trim().split(/\s+/).length;
  if (fieldCount === 1) {
    const ms = parseTimeSpan(schedule);
    if (ms === undefined || ms <= 0) {
      throw new TimerScheduleError(
        `Timer schedule '${schedule}' is neither an NCRONTAB expression nor a positive TimeSpan (hh:mm:ss).`,
      );
    }
    return { kind: "constant", expression: schedule, intervalMs: ms };
  }
  return parseNcrontab(schedule);
}

/** Which calendar the wall-clock fields are read in: UTC (Azure's default) or this process's local time zone (TZ). */
export type TimerTimeZone = "utc" | "local";

interface Fields {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
}

function wallFields(ms: number, zone: TimerTimeZone): Fields {
  const t = new Date(ms);
  return zone === "utc"
    ? {
        y: t.getUTCFullYear(),
        mo: t.getUTCMonth(),
        d: t.getUTCDate(),
        h: t.getUTCHours(),
        mi: t.getUTCMinutes(),
        s: t.getUTCSeconds(),
      }
    : {
        y: t.getFullYear(),
        mo: t.getMonth(),
        d: t.getDate(),
        h: t.getHours(),
        mi: t.getMinutes(),
        s: t.getSeconds(),
      };
}

/** True when the instant's wall-clock fields match (ms are ignored). */
export function cronMatches(c: CronExpression, ms: number, zone: TimerTimeZone = "utc"): boolean {
  const f = wallFields(ms, zone);
  const dow = zone === "utc" ? new Date(ms).getUTCDay() : new Date(ms).getDay();
  return (
    !!c.months[f.mo + 1] &&
    !!c.days[f.d] &&
    !!c.daysOfWeek[dow] &&
    !!c.hours[f.h] &&
    !!c.minutes[f.mi] &&
    !!c.seconds[f.s]
  );
}

/** 28 years: the Gregorian weekday/leap cycle within any century, so any possible date has occurred by then. */
const SEARCH_LIMIT_MS = 28 * 366 * 86_400_000;

/**
 * The first occurrence strictly after `afterMs` in wall-clock time of `zone`, or undefined when there is none within
 * 28 years (e.g. Feb 29 on a weekday that never falls on it in range). In "local", a wall time skipped by a DST
 * change resolves as JavaScript's Date does (forward), and a repeated hour is not run twice.
 */
export function nextCronOccurrence(
  c: CronExpression,
  afterMs: number,
  zone: TimerTimeZone = "utc",
): number | undefined {
  const f = wallFields(afterMs, zone);
  // Work on wall-clock time as if it were UTC (NCrontab works on zone-less DateTime), then map back.
  let t = Date.UTC(f.y, f.mo, f.d, f.h, f.mi, f.s) + 1000;
  const limit = t + SEARCH_LIMIT_MS;
  while (t <= limit) {
    const w = new Date(t);
    const y = w.getUTCFullYear();
    const mo = w.getUTCMonth();
    const d = w.getUTCDate();
    const h = w.getUTCHours();
    const mi = w.getUTCMinutes();
    const s = w.getUTCSeconds();
    if (!c.months[mo + 1]) {
      t = Date.UTC(y, mo + 1, 1);
      continue;
    }
    if (!c.days[d] || !c.daysOfWeek[w.getUTCDay()]) {
      t = Date.UTC(y, mo, d + 1);
      continue;
    }
    if (!c.hours[h]) {
      t = Date.UTC(y, mo, d, h + 1);
      continue;
    }
    if (!c.minutes[mi]) {
      t = Date.UTC(y, mo, d, h, mi + 1);
      continue;
    }
    if (!c.seconds[s]) {
      const nextSecond = c.seconds.findIndex((on, i) => on && i > s);
      t = nextSecond >= 0 ? Date.UTC(y, mo, d, h, mi, nextSecond) : Date.UTC(y, mo, d, h, mi + 1);
      continue;
    }
    if (zone === "utc") return t;
    const real = new Date(y, mo, d, h, mi, s).getTime();
    if (real > afterMs) return real;
    t += 1000;
  }
  return undefined;
}

/** The next occurrence of any schedule strictly after `afterMs` (constant: afterMs + interval). */
export function nextOccurrence(
  schedule: TimerSchedule,
  afterMs: number,
  zone: TimerTimeZone = "utc",
): number | undefined {
  if (schedule.kind === "constant") return afterMs + schedule.intervalMs;
  return nextCronOccurrence(schedule, afterMs, zone);
}
