/**
 * Child process for bench/locks.bench.ts, started with `fork` (`node --import tsx` plus an IPC channel): runs
 * the embedded emulator (in memory, 127.0.0.1, free port, throughput not enforced) so that the server has an
 * event loop of its own and the SDK load generator in the parent does not share it.
 *
 *   child → parent  {type:"ready", endpoint, key}
 *   parent → child  {type:"stats", id} → {type:"stats", id, meter, responses, cpuMs}
 *   parent → child  {type:"close"}     → closes the emulator and exits
 *
 * `responses` counts every HTTP response by `METHOD /dbs/x/colls/<container>/docs[/x] <status>` through the
 * `http.server.response.finish` diagnostics channel: unlike the RU meter it also sees requests answered with
 * an error (409 on create, 412 on If-Match, 404), which the emulator does not meter.
 * Nothing here measures time: the parent does.
 */
import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage, ServerResponse } from "node:http";
import { startEmulator } from "@cosmos-feed/emulator";

export type MeterSnapshot = Record<string, Record<string, { count: number; ru: number; throttled: number }>>;

export type ToParent =
  | { type: "ready"; endpoint: string; key: string }
  | { type: "stats"; id: number; meter: MeterSnapshot; responses: Record<string, number>; cpuMs: number };

export type ToChild = { type: "stats"; id: number } | { type: "close" };

/** `/dbs/bench/colls/locks/docs/abc?x` → `/dbs/x/colls/locks/docs/x`: the container id is kept. */
function routeShape(req: IncomingMessage): string {
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  const parts = (q < 0 ? url : url.slice(0, q)).split("/").filter((s) => s.length > 0);
  const shaped = parts.map((p, i) => (i % 2 === 1 && parts[i - 1] !== "colls" ? "x" : p));
  return `${req.method ?? "?"} /${shaped.join("/")}`;
}

function send(msg: ToParent): void {
  process.send?.(msg);
}

async function main(): Promise<void> {
  const responses: Record<string, number> = {};
  subscribe("http.server.response.finish", (message) => {
    const { request, response } = message as { request: IncomingMessage; response: ServerResponse };
    const key = `${routeShape(request)} ${response.statusCode}`;
    responses[key] = (responses[key] ?? 0) + 1;
  });
  // No provisioned throughput on any container and enforcement off: nothing is ever throttled.
  const emu = await startEmulator({ port: 0, host: "127.0.0.1", enforceThroughput: false });
  process.on("message", (msg: ToChild) => {
    if (msg.type === "stats") {
      const cpu = process.cpuUsage();
      send({
        type: "stats",
        id: msg.id,
        meter: emu.meter.snapshot() as MeterSnapshot,
        responses: { ...responses },
        cpuMs: (cpu.user + cpu.system) / 1000,
      });
    } else if (msg.type === "close") {
      void emu.close().then(() => process.exit(0));
    }
  });
  process.on("disconnect", () => process.exit(0));
  send({ type: "ready", endpoint: emu.endpoint, key: emu.key });
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
