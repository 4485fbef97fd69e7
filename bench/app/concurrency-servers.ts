/**
 * Phase 5's fixture app and the server children it runs on: the dev host (`cosmos-feed start` on the fixture), the
 * same handler module on bare node:http (bench/app/bare-child.ts), and optionally the dev host of an older
 * checkout. Each server is a child process of its own; the bench process is only the client.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processCpuMs } from "./cpu.js";
import { config, HERE, ROOT, trackChild } from "./setup.js";

/**
 * The fixture's handlers, one module both servers load. `busy` spins for the `ms` the request names (the bench
 * draws them from a seeded generator, so every server gets the same work), then answers; `pid` names the process
 * the app runs in (the dev host's worker, the bare child, or the old in-process dev host itself).
 */
const HANDLERS = `// Written by bench/app/concurrency-servers.ts (phase 5 of bench:app).
export async function noop() {
  return { body: "ok" };
}

export async function busy(request) {
  const ms = Number(request.query.get("ms"));
  if (!Number.isFinite(ms) || ms < 0 || ms > 1000) {
    return { status: 400, jsonBody: { code: "BadSpin", reason: "ms: a number of milliseconds, 0 to 1000" } };
  }
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // a CPU-bound handler: the event loop of the process it runs in is held for the whole spin
  }
  return { body: "spun" };
}

export async function pid() {
  return { body: String(process.pid) };
}
`;

const INDEX = `// Written by bench/app/concurrency-servers.ts (phase 5 of bench:app).
import { app } from "@azure/functions";
import { busy, noop, pid } from "../lib/handlers.js";

for (const [name, handler] of Object.entries({ noop, busy, pid })) {
  app.http(name, { methods: ["GET"], authLevel: "anonymous", handler });
}
`;

/** The paths both servers answer (the dev host's default route prefix is `api`). */
export const FIXTURE_ROUTES = ["noop", "busy", "pid"] as const;

export interface Fixture {
  dir: string;
  handlersFile: string;
  remove(): void;
}

/**
 * Writes the fixture app under the repository's git-ignored .data/ (as test/devhost/worker-process.test.ts makes
 * its apps), so that it resolves @azure/functions from the repository's node_modules.
 */
export function writeFixture(): Fixture {
  const parent = join(ROOT, ".data", "bench-apps");
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(join(parent, "concurrency-"));
  const files: Record<string, string> = {
    "package.json": JSON.stringify({ name: "bench-concurrency", type: "module", main: "src/index.js" }),
    "host.json": JSON.stringify({ version: "2.0" }),
    "lib/handlers.js": HANDLERS,
    "src/index.js": INDEX,
  };
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return {
    dir,
    handlersFile: join(dir, "lib", "handlers.js"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export type ServerKind = "devhost" | "bare" | "before";

export interface ServerChild {
  kind: ServerKind;
  /** http://127.0.0.1:<port> */
  url: string;
  child: ChildProcess;
  /** The process the app runs in (the worker for the dev host; the server itself otherwise). */
  appPid: number;
  /** CPU time so far (ms) of the server process and, when the app runs apart, of the app's process. */
  cpuMs(): { server: number | null; app: number | null };
  /** The last of what the child printed (for errors). */
  tail(): string;
  stop(): Promise<void>;
}

const TAIL_CHARS = 8_000;

/**
 * Spawns a server child and waits until `ready` finds its URL in what it printed. Its output is consumed as a
 * terminal would (the dev host logs every invocation) and only the tail is kept.
 */
async function spawnServer(
  kind: ServerKind,
  args: string[],
  cwd: string,
  ready: (output: string) => string | undefined,
  stdin: "ignore" | "pipe" = "ignore",
  env: NodeJS.ProcessEnv = process.env,
): Promise<Omit<ServerChild, "appPid" | "cpuMs">> {
  const child = spawn(process.execPath, args, { cwd, env, stdio: [stdin, "pipe", "pipe"] });
  trackChild(child);
  let text = "";
  let url: string | undefined;
  const onData = (d: Buffer) => {
    text += d.toString();
    if (url === undefined) url = ready(text);
    if (text.length > 2 * TAIL_CHARS) text = text.slice(-TAIL_CHARS);
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + config.hostStartTimeoutMs;
  while (url === undefined) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${kind}: the server exited (${child.exitCode ?? child.signalCode}):\n${text}`);
    if (Date.now() > deadline) throw new Error(`${kind}: the server did not start in time:\n${text}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  const base = url;
  return {
    kind,
    url: base,
    child,
    tail: () => text.slice(-TAIL_CHARS),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const kill = setTimeout(() => child.kill("SIGKILL"), config.serverStopTimeoutMs);
      await exited;
      clearTimeout(kill);
    },
  };
}

/** The dev host's function list line: `\tnoop: [GET] http://127.0.0.1:<port>/api/noop`, once "Host started". */
const devhostReady = (text: string) =>
  text.includes("Host started") ? /\] (http:\/\/127\.0\.0\.1:\d+)\//.exec(text)?.[1] : undefined;

/**
 * `node <checkout>/packages/devhost/bin/cosmos-feed.js start <fixture> --no-build --port 0`: the fixture has no Cosmos DB function,
 * so no emulator is started and no connection is needed. `nodeArgs` go before the CLI's file (node's own, e.g.
 * --cpu-prof: the host process's); `env` (the bench's by default) reaches the host process and its worker.
 */
export async function startDevhostServer(
  kind: "devhost" | "before",
  fixture: Fixture,
  checkout = ROOT,
  { nodeArgs = [], env = process.env }: { nodeArgs?: string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<ServerChild> {
  const bin = join(checkout, "packages", "devhost", "bin", "cosmos-feed.js");
  if (!existsSync(bin)) throw new Error(`${kind}: ${bin} does not exist.`);
  const s = await spawnServer(
    kind,
    [...nodeArgs, bin, "start", fixture.dir, "--no-build", "--port", "0"],
    fixture.dir,
    devhostReady,
    "ignore",
    env,
  );
  return withPids(s);
}

/** The same handler module on bare node:http in a child process of its own (bench/app/bare-child.ts). */
export async function startBareServer(fixture: Fixture): Promise<ServerChild> {
  const s = await spawnServer(
    "bare",
    ["--import", "tsx", join(HERE, "app", "bare-child.ts"), fixture.handlersFile],
    ROOT,
    (text) => /^listening (http:\S+)$/m.exec(text)?.[1],
    "pipe", // it exits when its stdin closes, so it never outlives the bench
  );
  return withPids(s);
}

async function withPids(s: Omit<ServerChild, "appPid" | "cpuMs">): Promise<ServerChild> {
  const res = await fetch(`${s.url}/api/pid`);
  if (res.status !== 200) throw new Error(`${s.kind}: GET /api/pid answered ${res.status}:\n${s.tail()}`);
  const appPid = Number(await res.text());
  const serverPid = s.child.pid;
  const apart = appPid !== serverPid;
  const known = (n: number | undefined) => (n === undefined ? null : n);
  return {
    ...s,
    appPid,
    cpuMs: () => ({
      server: known(processCpuMs(serverPid)),
      app: apart ? known(processCpuMs(appPid)) : null,
    }),
  };
}
