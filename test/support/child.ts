import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { WAIT_MS } from "../../bench/lib/until.js";
import type { EmulatorOptions } from "../../packages/emulator/src/index.js";

export interface EmulatorChild {
  process: ChildProcess;
  endpoint: string;
  key: string;
  port: number;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
}

const script = fileURLToPath(new URL("./emulator-child.ts", import.meta.url));

/** Spawns an emulator in a real child process (node --import tsx) and waits until it listens. */
export async function spawnEmulator(options: EmulatorOptions): Promise<EmulatorChild> {
  const child = spawn(process.execPath, ["--import", "tsx", script, JSON.stringify(options)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`emulator child exited (${code}) before listening`)));
  });
  const info = JSON.parse(first) as { endpoint: string; key: string; port: number };
  return { process: child, exited, ...info };
}

/**
 * Resolves on the child's first IPC message (the "ready" every test child sends once it started); rejects when the
 * child exits first or after `ms` (WAIT_MS unless given). `detail()` is appended to either error (e.g. the child's stderr so far).
 */
export function untilReady(
  proc: ChildProcess,
  what: string,
  detail: () => string = () => "",
  ms = WAIT_MS,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} not ready after ${ms} ms${detail()}`)), ms);
    proc.once("message", () => {
      clearTimeout(timer);
      resolve();
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before it was ready${detail()}`));
    });
  });
}
