import { CLI_TIMING } from "@cosmos-feed/emulator/lifecycle";

/**
 * The timing knobs of `cosmos-feed start`'s lifecycle (signals, stop, --watch), named once. They are not app
 * settings: they shape how the command line behaves, not how the app runs. See docs/devhost.md ("Stopping",
 * "--watch").
 */
export const LIFECYCLE = {
  /** Stop signals within this many ms of the first are one stop request (the emulator CLI's CLI_TIMING). */
  signalBurstMs: CLI_TIMING.signalBurstMs,
  /**
   * How long a graceful stop waits for in-flight HTTP requests and trigger invocations before it stops the
   * triggers anyway (their leases released) and cuts what is left.
   */
  stopDrainMs: 1_500,
  /**
   * The graceful stop's bound for everything the app runs: in-flight work is cut at `stopDrainMs`, a trigger's
   * lease hand-off at `triggerHandoffMs`, running activities at DURABLE_STOP_GRACE_MS, orchestration work items
   * at DURABLE_STOP_WORK_ITEMS_MS, so on a machine with a core to spare the whole stop (leases released, durable
   * hub, dashboard, emulator) ends well within it. Past it the CLI says what it still waits for — only the dev
   * host's own Cosmos DB requests are left then — and gives them until `stopGiveUpMs`.
   */
  stopDeadlineMs: 2_000,
  /** Past this the CLI stops waiting for a stop (a Cosmos DB account that no longer answers) and exits 1. */
  stopGiveUpMs: 10_000,
  /**
   * On stop, how long a Cosmos DB trigger keeps processing its released leases until another host takes them (the
   * processor's `handoffTimeout`; its default, the acquire interval + 2 s, would not fit in `stopDeadlineMs`).
   * Another dev host on the same leases takes them within its acquire interval either way; nothing is lost.
   */
  triggerHandoffMs: 300,
  /** --watch: a rebuild starts once no source file changed for this long (an editor's save is several events). */
  watchDebounceMs: 250,
  /** Under npm, how often the CLI checks that npm's shell still runs (the emulator CLI's CLI_TIMING). */
  npmShellPollMs: CLI_TIMING.npmShellPollMs,
  /**
   * The dev host's console lines wait this long to be written together (or until 64 KiB are waiting): a request's
   * Executing and Executed lines are then one write to the terminal, not one each, and the writes (synchronous in
   * Node for a pipe or a file) come after the request is answered, not in its way. Short enough that nobody
   * watching the console sees the difference.
   */
  consoleFlushMs: 10,
} as const;
