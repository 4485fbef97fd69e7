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

/**
 * Before a worker process starts with a debugger: waits (up to `waitMs`, polling) until nothing holds its port, so
 * that the new inspector binds the same port as the one before. `previousPid` is the worker that had it (a
 * restart), whose exit the caller has seen. Returns whether the port is free; the log says either way.
 */
export async function awaitInspectorPort(o: {
  address: InspectorAddress;
  waitMs: number;
  logger: HostLogger;
  previousPid?: number;
  /** Stops the wait (the dev host is stopping). */
  cancelled?: () => boolean;
}): Promise<boolean> {
  const where = formatAddress(o.address);
  if (o.address.port === 0) return true; // node picks a free port itself
  let free = await inspectorPortFree(o.address);
  if (!free) {
    o.logger.warn(
      `The debugger port ${where} is in use by another process: waiting up to ${o.waitMs} ms for it to be free before the worker process starts.`,
    );
    const deadline = Date.now() + o.waitMs;
    while (!free && Date.now() < deadline && !o.cancelled?.()) {
      await new Promise((r) => setTimeout(r, Math.min(INSPECTOR_PORT_POLL_MS, o.waitMs)));
      free = await inspectorPortFree(o.address);
    }
  }
  if (!free) {
    o.logger.warn(
      `The debugger port ${where} is still in use: the worker process starts, but node cannot open its debugger there (its own line says so). Stop what holds the port, or choose another one (--inspect=<port>, or languageWorkers__node__arguments).`,
    );
  } else if (o.previousPid !== undefined) {
    o.logger.info(
      `The debugger port ${where} is free (worker process ${o.previousPid} has exited): the next worker process listens there.`,
    );
  }
  return free;
}

/**
 * The node arguments of the next worker process (languageWorkers__node__arguments, `--inspect`), once the port of
 * the debugger they open is free (or the wait for it is over; the log says which).
 */
export async function nodeArgumentsOnceFree(
  o: { inspect?: string | true; logger: HostLogger; settings: Pick<WorkerSettings, "inspectorPortWaitMs"> },
  env: NodeJS.ProcessEnv,
  previousPid?: number,
  cancelled?: () => boolean,
): Promise<string[]> {
  const node = workerNodeArguments(env, o.inspect);
  if (node?.inspector) {
    const waitMs = o.settings.inspectorPortWaitMs;
    await awaitInspectorPort({ address: node.inspector, waitMs, logger: o.logger, previousPid, cancelled });
  }
  return node?.args ?? [];
}
