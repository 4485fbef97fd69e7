import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Container } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WAIT_MS, waitUntil } from "../../bench/lib/until.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

// `cosmos-feed start` child processes on one emulator (4 ranges): kill -9 and a restart miss no change, and two
// dev hosts share the trigger's leases. The fixture's trigger logs the ids of each batch.
const root = fileURLToPath(new URL("../..", import.meta.url));
let emu: TestEmulator;
let things: Container;
const children: ChildProcess[] = [];

interface Host {
  child: ChildProcess;
  seen: Set<string>;
  exited: Promise<unknown>;
  started: Promise<void>;
}

function startHost(): Host {
  const child = spawn(
    process.execPath,
    [
      "packages/devhost/bin/cosmos-feed.js",
      "start",
      "test/fixtures/app-cjs",
      "--port",
      "0",
      "--cosmos",
      emu.emulator.connectionString,
    ],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.push(child);
  const seen = new Set<string>();
  let text = "";
  let markStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    markStarted = resolve;
  });
  child.stdout?.on("data", (chunk: Buffer) => {
    text += chunk.toString();
    for (const m of text.matchAll(/saw \d+ documents: ([^\n]*)/g))
      for (const id of m[1].split(",")) seen.add(id);
    if (text.includes("Host started")) markStarted();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  void exited.then((code) => {
    if (code !== 0 && code !== null)
      console.log(`host exited ${code}:\n${text.split("\n").slice(-15).join("\n")}`);
  });
  return { child, seen, exited, started };
}

async function write(prefix: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  await Promise.all(ids.map((id) => things.items.create({ id })));
  return ids;
}

beforeAll(async () => {
  emu = await startTestEmulator({ rangesPerContainer: 4 });
  const { database } = await emu.client.databases.createIfNotExists({ id: "fixture" });
  ({ container: things } = await database.containers.createIfNotExists({
    id: "things",
    partitionKey: "/id",
  }));
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  await emu?.close();
});

describe("cosmos-feed start with a Cosmos DB trigger: crash, restart, two hosts", () => {
  it("misses no change across kill -9 and restart, and shares the leases between two hosts", async () => {
    const first = startHost();
    await first.started;
    const before = await write("before", 8);
    await waitUntil("the first host to see its changes", () => before.every((id) => first.seen.has(id)));
    first.child.kill("SIGKILL");
    await first.exited;

    const during = await write("during", 8); // written while no host runs
    const restarted = startHost();
    const second = startHost();
    await Promise.all([restarted.started, second.started]);
    const after = await write("after", 24);
    const union = () => new Set([...restarted.seen, ...second.seen]);
    // The restarted host may wait for the crashed owner's leases to expire (leaseExpirationInterval 3 s).
    await waitUntil("every change after the crash", () =>
      [...during, ...after].every((id) => union().has(id)),
    );
    // Balancing hands leases to the second host within a few acquire intervals (500 ms): keep changes coming.
    const more: string[] = [];
    const deadline = Date.now() + WAIT_MS;
    for (let round = 0; !(restarted.seen.size > 0 && second.seen.size > 0); round++) {
      if (Date.now() > deadline) throw new Error("timed out: both hosts to own leases");
      more.push(...(await write(`more${round}`, 4)));
      await new Promise((r) => setTimeout(r, 500));
    }
    await waitUntil("every later change", () => more.every((id) => union().has(id)));
    restarted.child.kill("SIGTERM");
    second.child.kill("SIGTERM");
    expect(await restarted.exited).toBe(0);
    expect(await second.exited).toBe(0);
  });
});
