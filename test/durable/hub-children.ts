/**
 * Task hub hosts in child processes (hub-child.ts) for the kill -9 tests: started with a config, ready once the
 * child's hub started, stopped with SIGKILL (a crash) or SIGTERM. Every child started is recorded in `children`, so
 * the test's afterAll can kill what is left.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { untilReady } from "../support/child.js";
import type { HubChildConfig } from "./hub-child.js";

const script = fileURLToPath(new URL("./hub-child.ts", import.meta.url));
const projectRoot = fileURLToPath(new URL("../..", import.meta.url));

export interface Child {
  proc: ChildProcess;
  exited: Promise<void>;
  stderr(): string;
  /** SIGKILL, then its exit. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful stop), then its exit. */
  stop(): Promise<void>;
}

export async function startChild(config: HubChildConfig, children: ChildProcess[]): Promise<Child> {
  const proc = spawn(process.execPath, ["--import", "tsx", script, JSON.stringify(config)], {
    cwd: projectRoot,
    stdio: ["ignore", "ignore", "pipe", "ipc"],
  });
  children.push(proc);
  let err = "";
  proc.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  await untilReady(proc, "hub child", () => `:\n${err}`);
  const signal = async (s: NodeJS.Signals) => {
    proc.kill(s);
    await exited;
  };
  return { proc, exited, stderr: () => err, kill: () => signal("SIGKILL"), stop: () => signal("SIGTERM") };
}
