/**
 * The timing knobs of the emulator's command line (`cosmos-emulator`, `cosmos-feed emulator`) and of the stop-signal
 * rule the dev host's `cosmos-feed start` shares with it, named once. The dev host's LIFECYCLE settings refer to
 * these. See docs/devhost.md ("Stopping").
 */
export const CLI_TIMING = {
  /**
   * Stop signals (SIGINT/SIGTERM) within this many ms of the first are one request to stop gracefully: Ctrl-C
   * under `npm start` / `npm run emulator` reaches the command twice within milliseconds (from the terminal, to the
   * whole process group, and forwarded by npm). A signal after this window forces the exit.
   */
  signalBurstMs: 1_000,
  /**
   * Under npm, how often the command checks that the shell npm ran it in still runs: npm forwards SIGTERM to that
   * shell (`sh -c`, which does not exec the command), the shell dies of it and the command would never hear of it;
   * a gone shell is taken as that SIGTERM (npm-shell.ts).
   */
  npmShellPollMs: 250,
} as const;
