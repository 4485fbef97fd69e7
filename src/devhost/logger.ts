import type { LogLevel } from "./coreTypes.js";

export interface LogRecord {
  time: Date;
  level: LogLevel;
  /** "Host" for the host's own lines, "Function.<name>" / "Function.<name>.User" as the host categorises. */
  category: string;
  message: string;
  invocationId?: string;
}

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
 * Lines waiting for the end of this turn of the event loop, in the order they were logged: one write per stream
 * and turn, not one per line. Writes to a pipe or a file are synchronous in Node on Linux, and a storm logs two
 * lines per invocation: line by line they cost the host's process about a tenth of its CPU in bench:app. Core
 * Tools' console logger queues its lines too. Flushed synchronously on exit, so only a SIGKILL can lose a turn's lines.
 */
const queued: { stream: NodeJS.WriteStream; text: string }[] = [];
let queuedBytes = 0;
let flushArmed = false;
/** A turn that logs more than this is written at once (a backlog never grows without bound). */
const MAX_QUEUED_BYTES = 64 * 1024;

/** Writes every queued line now (consecutive lines of one stream in one write). */
export function flushConsole(): void {
  flushArmed = false;
  let i = 0;
  while (i < queued.length) {
    const stream = queued[i].stream;
    let text = "";
    while (i < queued.length && queued[i].stream === stream) text += queued[i++].text;
    stream.write(text);
  }
  queued.length = 0;
  queuedBytes = 0;
}

let exitHooked = false;

/** Core Tools' console format: `[2026-11-23T12:00:00.000Z] message`; errors go to stderr. */
export const consoleSink: LogSink = (record) => {
  const text = `[${record.time.toISOString()}] ${record.message}\n`;
  queued.push({ stream: RANK[record.level] >= RANK.error ? process.stderr : process.stdout, text });
  queuedBytes += text.length;
  if (!exitHooked) {
    exitHooked = true;
    process.on("exit", flushConsole);
  }
  if (queuedBytes > MAX_QUEUED_BYTES) flushConsole();
  else if (!flushArmed) {
    flushArmed = true;
    setImmediate(flushConsole);
  }
};

/**
 * The host's log: minimum levels as host.json `logging.logLevel` sets them — `default`, overridden by the longest
 * matching category prefix ("Function", "Function.hello", "Function.hello.User", "Host") — and one sink.
 */
export class HostLogger {
  readonly minLevel: LogLevel;
  readonly #categoryLevels: [string, LogLevel][];
  readonly #sink: LogSink;

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

  isEnabled(level: LogLevel, category = "Host"): boolean {
    const lower = category.toLowerCase();
    const min =
      this.#categoryLevels.find(([prefix]) => {
        const p = prefix.toLowerCase();
        return lower === p || lower.startsWith(`${p}.`);
      })?.[1] ?? this.minLevel;
    return level !== "none" && min !== "none" && RANK[level] >= RANK[min];
  }

  log(level: LogLevel, message: string, extras: { category?: string; invocationId?: string } = {}): void {
    const category = extras.category ?? "Host";
    if (!this.isEnabled(level, category)) return;
    this.#sink({ time: new Date(), level, message, ...extras, category });
  }

  info(message: string): void {
    this.log("information", message);
  }
  warn(message: string): void {
    this.log("warning", message);
  }
  error(message: string): void {
    this.log("error", message);
  }
}
