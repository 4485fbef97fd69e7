import type { LogLevel } from "./coreTypes.js";
import { LIFECYCLE } from "./lifecycle/settings.js";

/** One log line. */
export interface LogRecord {
  /** When it was written. */
  time: Date;
  /** Its level. */
  level: LogLevel;
  /** "Host" for the host's own lines, "Function.<name>" / "Function.<name>.User" as the host categorises. */
  category: string;
  /** The text. */
  message: string;
  /** The invocation the line belongs to, if any. */
  invocationId?: string;
}

/** Where log lines go. */
export type LogSink = (record: LogRecord) => void;

const RANK: Record<LogLevel, number> = {
  trace: 0,
  debug: 1,
  information: 2,
  warning: 3,
  error: 4,
  critical: 5,
  none: 6,
};

/**
 * Lines waiting to be written, in the order they were logged: one write per stream every LIFECYCLE.consoleFlushMs
 * (or once 64 KiB wait), not one per line. Writes to a pipe or a file are synchronous in Node on Linux, and a request
 * logs two lines: line by line they cost the host's process about a tenth of its CPU in bench:app, and woke the
 * terminal (or whatever reads the pipe) twice per request. Core Tools' console logger queues its lines too. A line
 * is formatted when it is written, not when it is logged. Flushed synchronously on exit, so only a SIGKILL can lose
 * the last lines.
 */
const queued: { stream: NodeJS.WriteStream; time: Date; message: string }[] = [];
let queuedBytes = 0;
let flushArmed = false;
/** This much waiting is written at once (a backlog never grows without bound). */
const MAX_QUEUED_BYTES = 64 * 1024;
/** `[2026-11-23T12:00:00.000Z] ` */
const STAMP_CHARS = 27;

/** Writes every queued line now (consecutive lines of one stream in one write). */
export function flushConsole(): void {
  flushArmed = false;
  let i = 0;
  while (i < queued.length) {
    const stream = queued[i].stream;
    let text = "";
    for (; i < queued.length && queued[i].stream === stream; i++)
      text += `[${queued[i].time.toISOString()}] ${queued[i].message}\n`;
    stream.write(text);
  }
  queued.length = 0;
  queuedBytes = 0;
}

let exitHooked = false;

/** Core Tools' console format: `[2026-11-23T12:00:00.000Z] message`; errors go to stderr. */
export const consoleSink: LogSink = (record) => {
  const stream = RANK[record.level] >= RANK.error ? process.stderr : process.stdout;
  queued.push({ stream, time: record.time, message: record.message });
  queuedBytes += STAMP_CHARS + record.message.length + 1;
  if (!exitHooked) {
    exitHooked = true;
    process.on("exit", flushConsole);
  }
  if (queuedBytes > MAX_QUEUED_BYTES) flushConsole();
  else if (!flushArmed) {
    flushArmed = true;
    setTimeout(flushConsole, LIFECYCLE.consoleFlushMs).unref();
  }
};

const MAX_KEPT_CATEGORIES = 1_000;

/**
 * The host's log: minimum levels as host.json `logging.logLevel` sets them — `default`, overridden by the longest
 * matching category prefix ("Function", "Function.hello", "Function.hello.User", "Host") — and one sink.
 */
export class HostLogger {
  /** The default minimum level (host.json `logging.logLevel.default`). */
  readonly minLevel: LogLevel;
  readonly #categoryLevels: [string, LogLevel][];
  readonly #sink: LogSink;
  readonly #minLevels = new Map<string, LogLevel>();

  constructor(
    options: { minLevel?: LogLevel; categoryLevels?: Record<string, LogLevel>; sink?: LogSink } = {},
  ) {
    this.minLevel = options.minLevel ?? "information";
    // Longest prefix first.
    this.#categoryLevels = Object.entries(options.categoryLevels ?? {}).sort(
      (a, b) => b[0].length - a[0].length,
    );
    this.#sink = options.sink ?? consoleSink;
  }

  /** Whether a line at `level` in `category` is written (the longest matching category prefix decides). */
  isEnabled(level: LogLevel, category = "Host"): boolean {
    const min = this.#minLevelOf(category);
    return level !== "none" && min !== "none" && RANK[level] >= RANK[min];
  }

  /** The minimum level of a category, looked up once per category (every invocation logs under its function's). */
  #minLevelOf(category: string): LogLevel {
    const kept = this.#minLevels.get(category);
    if (kept !== undefined) return kept;
    const lower = category.toLowerCase();
    const min =
      this.#categoryLevels.find(([prefix]) => {
        const p = prefix.toLowerCase();
        return lower === p || lower.startsWith(`${p}.`);
      })?.[1] ?? this.minLevel;
    // Categories are the host's and its functions' (a few per function); bounded anyway.
    if (this.#minLevels.size >= MAX_KEPT_CATEGORIES) this.#minLevels.clear();
    this.#minLevels.set(category, min);
    return min;
  }

  /** Writes one line at `level` in `extras.category` (default "Host"), if that level is enabled there. */
  log(level: LogLevel, message: string, extras: { category?: string; invocationId?: string } = {}): void {
    const category = extras.category ?? "Host";
    if (!this.isEnabled(level, category)) return;
    this.#sink({ time: new Date(), level, message, ...extras, category });
  }

  /** Writes a Host line at information level. */
  info(message: string): void {
    this.log("information", message);
  }
  /** Writes a Host line at warning level. */
  warn(message: string): void {
    this.log("warning", message);
  }
  /** Writes a Host line at error level. */
  error(message: string): void {
    this.log("error", message);
  }
}
