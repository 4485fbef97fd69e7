// `@cosmos-feed/emulator/lifecycle`: what a command running the emulator in the foreground needs besides the
// emulator — one process per data folder (its lock file), the stop-signal rule (one Ctrl-C stops, a later one
// exits at once; npm's shell watched) and their timing knobs. The `cosmos-emulator` command uses them, and so does
// the dev host's `cosmos-feed start`. Light: it loads neither the emulator's server nor SQLite.
export {
  type DataFolderLock,
  DataFolderLockError,
  LOCK_FILE,
  type LockOwner,
  lockDataFolder,
  processAlive,
} from "./dataFolderLock.js";
export { type NpmShellWatchOptions, watchNpmShell } from "./npm-shell.js";
export { CLI_TIMING } from "./settings.js";
export { onStopSignals, type StopSignalAction, StopSignalBurst } from "./signals.js";
