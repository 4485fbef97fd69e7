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

/** Core Tools' console format: `[2026-11-23T12:00:00.000Z] message`; errors go to stderr. */
export const consoleSink: LogSink = (record) => {
  const line = `[${record.time.toISOString()}] ${record.message}\n`;
  if (RANK[record.level] >= RANK.error) process.stderr.write(line);
  else process.stdout.write(line);
};

/** The host's log: one minimum level (host.json `logging.logLevel.default`), one sink. */
export class HostLogger {
  readonly minLevel: LogLevel;
  readonly #sink: LogSink;

  constructor(options: { minLevel?: LogLevel; sink?: LogSink } = {}) {
    this.minLevel = options.minLevel ?? "information";
    this.#sink = options.sink ?? consoleSink;
  }

  isEnabled(level: LogLevel): boolean {
    return level !== "none" && RANK[level] >= RANK[this.minLevel];
  }

  log(level: LogLevel, message: string, extras: { category?: string; invocationId?: string } = {}): void {
    if (!this.isEnabled(level)) return;
    this.#sink({ time: new Date(), level, category: extras.category ?? "Host", message, ...extras });
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
