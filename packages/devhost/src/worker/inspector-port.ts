import type { ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import type { HostLogger } from "../logger.js";
import { formatAddress, type InspectorAddress, workerNodeArguments } from "./node-arguments.js";
import { INSPECTOR_PORT_POLL_MS, type WorkerSettings } from "./settings.js";

/**
 * Whether `address` can be bound now: what node's inspector will try as the worker starts. Only "in use" counts as
 * taken; any other failure (a host name that does not resolve …) is node's to report when it tries.
 */
export function inspectorPortFree(address: InspectorAddress): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", (e: NodeJS.ErrnoException) => resolve(e.code !== "EADDRINUSE"));
    probe.listen({ host: address.host, port: address.port, exclusive: true }, () =>
      probe.close(() => resolve(true)),
    );
  });
}

/** The last worker process started with a debugger on each address, in this process (across --watch restarts). */
const lastOnAddress = new Map<string, ChildProcess>();

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** Resolves once `child` has exited, or after `ms`. */
function exitOf(child: ChildProcess, ms: number): Promise<void> {
  if (exited(child)) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    child.once("exit", done);
    function done() {
      clearTimeout(timer);
      child.off("exit", done);
      resolve();
    }
  });
}

/**
 * Before a worker process starts with a debugger: the worker that had the port before (a crash, a --watch
 * restart) must have exited, and nothing else may hold the port — waited for up to `waitMs`, polling — so that the
 * new inspector binds the same port. Returns whether the port is free; the log says either way.
 */
export async function awaitInspectorPort(o: {
  address: InspectorAddress;
  waitMs: number;
  logger: HostLogger;
  /** Stops the wait (the dev host is stopping). */
  cancelled?: () => boolean;
}): Promise<boolean> {
  const where = formatAddress(o.address);
  if (o.address.port === 0) return true; // node picks a free port itself
  const deadline = Date.now() + o.waitMs;
  const previous = lastOnAddress.get(where);
  if (previous) await exitOf(previous, o.waitMs);
  let free = await inspectorPortFree(o.address);
  if (!free) {
    o.logger.warn(
      `The debugger port ${where} is in use by another process: waiting up to ${o.waitMs} ms for it to be free before the worker process starts.`,
    );
    while (!free && Date.now() < deadline && !o.cancelled?.()) {
      await new Promise((r) => setTimeout(r, Math.min(INSPECTOR_PORT_POLL_MS, o.waitMs)));
      free = await inspectorPortFree(o.address);
    }
  }
  if (!free) {
    o.logger.warn(
      `The debugger port ${where} is still in use: the worker process starts, but node cannot open its debugger there (its own line says so). Stop what holds the port, or choose another one (--inspect=<port>, or languageWorkers__node__arguments).`,
    );
  } else if (previous && exited(previous)) {
    o.logger.info(
      `The debugger port ${where} is free (worker process ${previous.pid} has exited): the next worker process listens there.`,
    );
  }
  return free;
}

/**
 * The node arguments of the next worker process (languageWorkers__node__arguments, `--inspect`), once the port of
 * the debugger they open is free (or the wait for it is over; the log says which). `spawned` records the process
 * that got the port, which the next start waits for.
 */
export async function nodeArgumentsOnceFree(
  o: { inspect?: string | true; logger: HostLogger; settings: Pick<WorkerSettings, "inspectorPortWaitMs"> },
  env: NodeJS.ProcessEnv,
  cancelled?: () => boolean,
): Promise<{ args: string[]; spawned(child: ChildProcess): void }> {
  const node = workerNodeArguments(env, o.inspect);
  const address = node?.inspector;
  if (address) {
    const waitMs = o.settings.inspectorPortWaitMs;
    await awaitInspectorPort({ address, waitMs, logger: o.logger, cancelled });
  }
  return {
    args: node?.args ?? [],
    spawned: (child) => {
      if (address && address.port !== 0) lastOnAddress.set(formatAddress(address), child);
    },
  };
}
