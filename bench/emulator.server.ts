/**
 * Child process for bench/emulator.bench.ts: starts ONE server (ours or @vercel/cosmosdb-server) on
 * 127.0.0.1 with a free port, so that the server has an event loop (and a core) of its own.
 *
 *   node --import tsx bench/emulator.server.ts ours|vercel [host]
 *
 * `host` (vercel only) defaults to 127.0.0.1; 0.0.0.0 reproduces its "localhost" account id trap.
 *
 * Talks to the parent over IPC (it must be started with `fork`):
 *   child → parent  {type:"ready", port, endpoint}
 *   parent → child  {type:"stats"}          → {type:"stats", atMs, requests, cpu, rss, event-loop delay}
 *   parent → child  {type:"memory"}         → {type:"memory", heap, external, rss}  (after full GCs)
 *   parent → child  {type:"profile-start"}  → {type:"profile-started"}
 *   parent → child  {type:"profile-stop"}   → {type:"profile", file}  (a .cpuprofile written by node:inspector)
 *   parent → child  {type:"stop"}           → closes the server and exits
 *
 * Requests are counted through the `http.server.request.start` diagnostics channel, which sees every
 * request either server receives without touching its code: the parent uses it to report how many HTTP
 * requests each SDK operation really cost (e.g. extra `GET /` account reads). Each stats answer carries the
 * moment (`atMs`) the child took it, and every answer the `id` of its request (as `re`): answers matched by
 * type alone were once taken for a later ask's (a warm-up phase asks twice at once), which diffed the counters
 * over the wrong windows (0.17–0.40 requests per operation).
 * `memory` needs `--expose-gc` (the parent forks with it): live memory only compares after full GCs.
 */
import { subscribe } from "node:diagnostics_channel";
import { writeFileSync } from "node:fs";
import type { IncomingMessage, Server } from "node:http";
import { Session } from "node:inspector";
import { findSourceMap } from "node:module";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { startEmulator } from "@cosmos-feed/emulator";

export type ServerKind = "ours" | "vercel";

/**
 * A request of the parent; `id` comes back as the answer's `re`, so an answer that arrives after its asker
 * gave up (or two asks in flight at once) is never taken for another's.
 */
export type ParentMessage = (
  | { type: "stats" }
  | { type: "memory" }
  | { type: "profile-start" }
  | { type: "profile-stop"; file: string }
  | { type: "stop" }
) & { id?: number };

export type ChildMessage = (
  | { type: "ready"; port: number; endpoint: string }
  | {
      type: "stats";
      /** When this child took these figures: epoch ms (performance.timeOrigin + now, sub-ms). */
      atMs: number;
      /** Requests received so far, keyed by `METHOD route-shape` (e.g. `GET /dbs/x/colls/x/docs/x`). */
      requests: Record<string, number>;
      cpuUserMs: number;
      cpuSystemMs: number;
      rssBytes: number;
      /** Event-loop delay since the previous stats message (ms): p99 and max. */
      loopDelayP99Ms: number;
      loopDelayMaxMs: number;
    }
  | {
      type: "memory";
      /** After full GCs: V8 heap in use, memory of C++ objects bound to JS (Buffers …), resident set. */
      heapUsedBytes: number;
      externalBytes: number;
      rssBytes: number;
    }
  | { type: "profile-started" }
  | { type: "profile"; file: string }
  | { type: "error"; message: string }
) & { re?: number };

const requests: Record<string, number> = {};
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();

/** `/dbs/db1/colls/c1/docs/abc?x` → `/dbs/x/colls/x/docs/x`: names replaced so routes aggregate. */
function routeShape(url: string): string {
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  const parts = path.split("/").filter((s) => s.length > 0);
  return `/${parts.map((p, i) => (i % 2 === 1 ? "x" : p)).join("/")}`;
}

subscribe("http.server.request.start", (message) => {
  const { request } = message as { request: IncomingMessage };
  const key = `${request.method ?? "?"} ${routeShape(request.url ?? "/")}`;
  requests[key] = (requests[key] ?? 0) + 1;
});

function send(msg: ChildMessage): void {
  process.send?.(msg);
}

async function startOurs(): Promise<{ port: number; endpoint: string; close: () => Promise<void> }> {
  // Default settings: in memory, no provisioned throughput unless the client asks (it does not).
  const emu = await startEmulator({ port: 0, host: "127.0.0.1" });
  return { port: emu.port, endpoint: emu.endpoint, close: () => emu.close() };
}

async function startVercel(
  host: string,
): Promise<{ port: number; endpoint: string; close: () => Promise<void> }> {
  const { createHttpServer } = await import("@vercel/cosmosdb-server");
  // keepAlive: without it vercel answers every request with `connection: close`, so each request
  // would pay a new TCP connection. Bound to 127.0.0.1 so its account id is not "localhost"
  // (it names the account after the bound address, and 0.0.0.0 becomes "localhost").
  const server: Server = createHttpServer({ keepAlive: true });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    endpoint: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function post<T>(session: Session, method: string, params?: object): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    session.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result as T)));
  });
}

interface ProfileWithFrames {
  nodes: { callFrame: { url: string; lineNumber: number; columnNumber: number } }[];
}

/**
 * tsx serves each .ts file as one whitespace-minified line; map every frame back to its source line and
 * column (0-based, as in the profile) through the source maps tsx registers, so the profile names lines.
 */
function mapToSource(profile: ProfileWithFrames): void {
  for (const { callFrame: f } of profile.nodes) {
    if (!f.url.startsWith("file://") || !f.url.endsWith(".ts")) continue;
    const entry = findSourceMap(f.url)?.findEntry(f.lineNumber, f.columnNumber);
    if (entry && "originalLine" in entry) {
      f.lineNumber = entry.originalLine;
      f.columnNumber = entry.originalColumn;
    }
  }
}

async function main(): Promise<void> {
  const kind = process.argv[2] as ServerKind | undefined;
  if (kind !== "ours" && kind !== "vercel") throw new Error("usage: emulator.server.ts ours|vercel");
  const server = kind === "ours" ? await startOurs() : await startVercel(process.argv[3] ?? "127.0.0.1");
  let session: Session | undefined;

  process.on("message", (raw: ParentMessage) => {
    const answer = (msg: ChildMessage) => send({ ...msg, re: raw.id });
    void (async () => {
      switch (raw.type) {
        case "stats": {
          const cpu = process.cpuUsage();
          answer({
            type: "stats",
            atMs: performance.timeOrigin + performance.now(),
            requests: { ...requests },
            cpuUserMs: cpu.user / 1000,
            cpuSystemMs: cpu.system / 1000,
            rssBytes: process.memoryUsage().rss,
            loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
            loopDelayMaxMs: loopDelay.max / 1e6,
          });
          loopDelay.reset();
          break;
        }
        case "memory": {
          const gc = (globalThis as { gc?: () => void }).gc;
          if (!gc) throw new Error("memory needs node --expose-gc");
          // Several full collections with turns in between, so weak callbacks and finalizers have run.
          for (let i = 0; i < 3; i++) {
            gc();
            await new Promise((r) => setImmediate(r));
          }
          const m = process.memoryUsage();
          answer({ type: "memory", heapUsedBytes: m.heapUsed, externalBytes: m.external, rssBytes: m.rss });
          break;
        }
        case "profile-start": {
          session = new Session();
          session.connect();
          await post(session, "Profiler.enable");
          await post(session, "Profiler.setSamplingInterval", { interval: 500 });
          await post(session, "Profiler.start");
          answer({ type: "profile-started" });
          break;
        }
        case "profile-stop": {
          if (!session) throw new Error("profile-stop without profile-start");
          const { profile } = await post<{ profile: ProfileWithFrames }>(session, "Profiler.stop");
          session.disconnect();
          session = undefined;
          mapToSource(profile);
          writeFileSync(raw.file, JSON.stringify(profile));
          answer({ type: "profile", file: raw.file });
          break;
        }
        case "stop": {
          await server.close();
          process.exit(0);
        }
      }
    })().catch((e: unknown) => answer({ type: "error", message: String((e as Error)?.stack ?? e) }));
  });
  process.on("disconnect", () => process.exit(0));
  send({ type: "ready", port: server.port, endpoint: server.endpoint });
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
