import type { ChildProcess } from "node:child_process";
import { ask, forkTs, stopChild, waitForMessage } from "./child.js";

/** What an emulator child sends once it listens. */
export interface EmulatorReady {
  type: "ready";
  endpoint: string;
  key: string;
}

/** A stats answer: the child echoes the request's `id`. */
export interface EmulatorStatsMessage {
  type: "stats";
  id: number;
}

/** What the bench sends an emulator child. */
export type EmulatorRequest = { type: "stats"; id: number } | { type: "close" };

/**
 * An embedded emulator in its own child process (`node --import tsx <module> ...args`): the benches' server
 * side, so it does not share the client's event loop. `S` is the child's stats answer (RU meter, request
 * counters, CPU time: each bench's child reports what that bench needs).
 */
export class EmulatorProcess<S extends EmulatorStatsMessage> {
  private nextId = 0;
  private constructor(
    readonly child: ChildProcess,
    readonly endpoint: string,
    readonly key: string,
  ) {}

  static async start<S extends EmulatorStatsMessage>(
    modulePath: string,
    args: string[],
    cwd: string,
  ): Promise<EmulatorProcess<S>> {
    const child = forkTs(modulePath, args, cwd);
    const ready = await waitForMessage<EmulatorReady, "ready">(child, "ready", "emulator child");
    return new EmulatorProcess<S>(child, ready.endpoint, ready.key);
  }

  stats(): Promise<S> {
    const id = ++this.nextId;
    return ask<EmulatorReady | S, S>(
      this.child,
      { type: "stats", id } satisfies EmulatorRequest,
      (m): m is S => m.type === "stats" && m.id === id,
    );
  }

  close(): Promise<void> {
    return stopChild(this.child, { type: "close" } satisfies EmulatorRequest);
  }
}
