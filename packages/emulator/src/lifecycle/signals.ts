import { watchNpmShell } from "./npm-shell.js";
import { CLI_TIMING } from "./settings.js";

/** What a stop signal means once the burst rule has looked at it. */
export type StopSignalAction = "stop" | "same-request" | "force";

/**
 * Tells one stop request from a later, separate one. A terminal's Ctrl-C sends SIGINT to the whole process group,
 * so under `npm start` the CLI gets it twice within milliseconds (the terminal's, and the one npm forwards):
 * every signal within `burstMs` of the first is the same request; only a signal after that forces the exit.
 */
export class StopSignalBurst {
  #firstAt: number | undefined;

  constructor(
    private readonly burstMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Classifies one received signal. */
  receive(): StopSignalAction {
    const at = this.now();
    if (this.#firstAt === undefined) {
      this.#firstAt = at;
      return "stop";
    }
    return at - this.#firstAt <= this.burstMs ? "same-request" : "force";
  }
}

/**
 * Installs SIGINT/SIGTERM handlers: the first signal (and any in its burst) calls `stop` once; a later one calls
 * `force`. Under npm, the shell npm ran this in dying counts as a SIGTERM (npm-shell.ts). Returns a function that
 * removes the handlers.
 */
export function onStopSignals(options: {
  burstMs: number;
  stop: (signal: NodeJS.Signals) => void;
  force: (signal: NodeJS.Signals) => void;
  /** Told of a signal that belongs to the request already being served (not a second request). */
  repeated?: (signal: NodeJS.Signals) => void;
}): () => void {
  const burst = new StopSignalBurst(options.burstMs);
  let repeatedOnce = false;
  const handler = (signal: NodeJS.Signals) => {
    const action = burst.receive();
    if (action === "stop") options.stop(signal);
    else if (action === "force") options.force(signal);
    else if (!repeatedOnce) {
      repeatedOnce = true;
      options.repeated?.(signal);
    }
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
  const unwatch = watchNpmShell({ everyMs: CLI_TIMING.npmShellPollMs, onGone: () => handler("SIGTERM") });
  return () => {
    process.off("SIGINT", handler);
    process.off("SIGTERM", handler);
    unwatch();
  };
}
