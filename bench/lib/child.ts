import { type ChildProcess, fork } from "node:child_process";

/** How long a child gets to exit after being asked to, before SIGKILL (ms). */
export const CHILD_EXIT_GRACE_MS = 5_000;

/**
 * Node flags every bench child gets besides its own (space-separated), e.g. `--cpu-prof --cpu-prof-dir=prof` to
 * profile the emulator child: Node refuses --cpu-prof in NODE_OPTIONS.
 */
export const CHILD_NODE_ARGS_VARIABLE = "BENCH_CHILD_NODE_ARGS";

/**
 * Forks a TypeScript module as a child with an IPC channel (`node --import tsx`, plus `nodeOptions` such as
 * `--expose-gc`, plus BENCH_CHILD_NODE_ARGS), sharing stdout/stderr.
 */
export function forkTs(
  modulePath: string,
  args: string[],
  cwd: string,
  nodeOptions: string[] = [],
): ChildProcess {
  return fork(modulePath, args, {
    cwd,
    execArgv: [
      ...nodeOptions,
      ...(process.env[CHILD_NODE_ARGS_VARIABLE]?.split(" ").filter((a) => a !== "") ?? []),
      "--import",
      "tsx",
    ],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
}

/**
 * Waits for the child's first message of type `type`; rejects if the child exits first. The message type
 * is a union with a string `type` tag, as every bench child speaks.
 */
export function waitForMessage<M extends { type: string }, K extends M["type"]>(
  child: ChildProcess,
  type: K,
  what: string,
): Promise<Extract<M, { type: K }>> {
  return new Promise((resolveMessage, reject) => {
    const onExit = (code: number | null): void => {
      child.off("message", onMessage);
      reject(new Error(`${what} exited (${code})`));
    };
    const onMessage = (m: M): void => {
      if (m.type !== type) return;
      child.off("exit", onExit);
      child.off("message", onMessage);
      resolveMessage(m as Extract<M, { type: K }>);
    };
    child.once("exit", onExit);
    child.on("message", onMessage);
  });
}

/** Sends `message` and resolves with the first answer `matches` accepts (`reject`s turn into errors). */
export function ask<M, A extends M>(
  child: ChildProcess,
  message: unknown,
  matches: (m: M) => m is A,
  failure?: (m: M) => string | undefined,
): Promise<A> {
  return new Promise((resolveAnswer, reject) => {
    const onMessage = (m: M): void => {
      const error = failure?.(m);
      if (!matches(m) && error === undefined) return;
      child.off("message", onMessage);
      if (error !== undefined) reject(new Error(error));
      else resolveAnswer(m as A);
    };
    child.on("message", onMessage);
    child.send(message as object);
  });
}

/** Asks a child to exit with `message`; SIGKILL after CHILD_EXIT_GRACE_MS. Resolves once it has exited. */
export async function stopChild(child: ChildProcess, message: unknown): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.send(message as object);
  const timer = setTimeout(() => child.kill("SIGKILL"), CHILD_EXIT_GRACE_MS);
  await exited;
  clearTimeout(timer);
}
