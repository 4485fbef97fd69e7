import { EmulatorStartError } from "@cosmos-feed/emulator";
import { AllowedHostsError } from "@cosmos-feed/emulator/hosts";
import { DataFolderLockError, onStopSignals } from "@cosmos-feed/emulator/lifecycle";
import { DevHostError } from "../errors.js";
import { LIFECYCLE } from "../lifecycle/settings.js";
import { flushConsole } from "../logger.js";
import { type StartCommandOptions, type StartedApp, startFromCommandLine } from "../startCommand.js";

/** The one line `start` prints when it cannot start: what to change, not a stack trace (unless the app threw). */
function startFailure(e: unknown): string {
  const err = e as NodeJS.ErrnoException & { address?: string; port?: number };
  return e instanceof DevHostError ||
    e instanceof EmulatorStartError ||
    e instanceof AllowedHostsError ||
    e instanceof DataFolderLockError
    ? e.message
    : err?.code === "ECONNREFUSED"
      ? `Cannot reach Cosmos DB at ${err.address}:${err.port} (a connection setting of the app points there): start it, or run with --cosmos emulator.`
      : `Cannot start: ${err?.message ?? String(e)}`;
}

/**
 * The CLI's own lines (no timestamp), after the host's lines logged before them: the host's console sink writes
 * once per event-loop turn, and a direct write would overtake what it still holds.
 */
const afterHostLines =
  (write: (line: string) => void) =>
  (line: string): void => {
    flushConsole();
    write(line);
  };
const say = {
  log: afterHostLines(console.log),
  warn: afterHostLines(console.warn),
  error: afterHostLines(console.error),
};

/**
 * `cosmos-feed start`: starts the app and stops it on SIGINT/SIGTERM. Ctrl-C under `npm start` is a burst of two
 * signals (the terminal's to the process group, and npm's forwarded copy): one graceful stop, bounded by
 * LIFECYCLE.stopDeadlineMs, then exit 0; only a later, separate signal exits at once (130). The handlers are in
 * place before the app starts: a signal during start-up stops it once it has started.
 */
export async function runStart(options: StartCommandOptions): Promise<void> {
  const starting: Promise<StartedApp> = startFromCommandLine(options);
  onStopSignals({
    burstMs: LIFECYCLE.signalBurstMs,
    stop: (signal) => {
      const began = performance.now();
      say.log(`Received ${signal}; stopping.`);
      let waitingFor = "the start to finish";
      // What the app still runs is cut within stopDeadlineMs (in-flight work gets stopDrainMs); past it only the
      // dev host's own requests remain (leases released, the task hub, the emulator's last write), which a loaded
      // machine or a remote account can slow down: they get until stopGiveUpMs before the CLI gives up.
      let overrun = setTimeout(() => {
        say.warn(
          `cosmos-feed start: the stop takes longer than ${LIFECYCLE.stopDeadlineMs} ms (still waiting for ${waitingFor}); giving it up to ${LIFECYCLE.stopGiveUpMs} ms.`,
        );
        overrun = setTimeout(() => {
          say.error(
            `cosmos-feed start: the stop did not finish within ${LIFECYCLE.stopGiveUpMs} ms (still waiting for ${waitingFor}); exiting.`,
          );
          process.exit(1);
        }, LIFECYCLE.stopGiveUpMs - LIFECYCLE.stopDeadlineMs);
      }, LIFECYCLE.stopDeadlineMs);
      const phase = (what: string) => {
        waitingFor = what;
      };
      // A start that fails exits 1 below; one that succeeds is stopped at once.
      void starting.then(
        (started) =>
          started.stop({ phase }).then(
            () => {
              clearTimeout(overrun);
              say.log(`Stopped (${Math.round(performance.now() - began)} ms).`);
              process.exit(0);
            },
            (e) => {
              say.error(`cosmos-feed start: stopping failed: ${(e as Error)?.message ?? String(e)}`);
              process.exit(1);
            },
          ),
        () => undefined,
      );
    },
    repeated: (signal) => say.log(`Received ${signal} again (the same Ctrl-C); still stopping gracefully.`),
    force: (signal) => {
      say.error(`cosmos-feed start: received ${signal} while stopping; exiting at once.`);
      process.exit(130);
    },
  });
  try {
    await starting;
  } catch (e) {
    say.error(`cosmos-feed start: ${startFailure(e)}`);
    process.exit(1);
  }
}
