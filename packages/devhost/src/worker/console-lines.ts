import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type { HostLogger } from "../logger.js";

/**
 * The level of a line the worker wrote to stderr, as the host's WorkerProcess.ParseErrorMessageAndLog reads it:
 * "warn" → warning; "error", "fail", "severe", "unhandled exception" → error; anything else (node's "Debugger
 * listening on ws://…", "Debugger attached.") → information.
 */
export function stderrLevel(line: string): "warning" | "error" | "information" {
  if (/warn/i.test(line)) return "warning";
  return /error|fail|severe|unhandled exception/i.test(line) ? "error" : "information";
}

/**
 * What the app — and node itself ("Debugger listening on ws://…") — writes to stdout/stderr is the worker's
 * console: the host logs it line by line as written (category Worker), stdout as information, stderr by its words.
 */
export function logWorkerConsole(child: ChildProcess, logger: HostLogger): void {
  if (child.stdout)
    createInterface({ input: child.stdout }).on("line", (line) =>
      logger.log("information", line, { category: "Worker" }),
    );
  if (child.stderr)
    createInterface({ input: child.stderr }).on("line", (line) =>
      logger.log(stderrLevel(line), line, { category: "Worker" }),
    );
}
