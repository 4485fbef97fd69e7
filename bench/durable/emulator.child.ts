/**
 * The emulator for bench/durable.bench.ts, in a child process of its own (started with `fork`, so
 * `node --import tsx` plus an IPC channel): the server gets its own event loop, as the dev host's emulator would
 * be another process beside a Functions host.
 *
 *   child → parent  {type:"ready", endpoint, key}
 *   parent → child  {type:"stats", id}  → {type:"stats", id, meter, cpuMs, rssBytes}
 *   parent → child  {type:"close"}      → closes the server and exits
 *
 * In memory, on 127.0.0.1 with a free port, throughput not enforced (the bench's containers have none, as the dev
 * host's): nothing is ever throttled. `meter` is the emulator's own RU meter (every data-plane request, charged as
 * the emulator charges it, per `db/container` and operation kind).
 */

import type { MeterSnapshot } from "@cosmos-feed/emulator";
import { startEmulator } from "@cosmos-feed/emulator";

export type EmulatorChildStats = {
  type: "stats";
  id: number;
  meter: MeterSnapshot<string>;
  cpuMs: number;
  rssBytes: number;
};
type ToParent = { type: "ready"; endpoint: string; key: string } | EmulatorChildStats;
type ToChild = { type: "stats"; id: number } | { type: "close" };

const send = (msg: ToParent): void => {
  process.send?.(msg);
};

const emu = await startEmulator({ port: 0, host: "127.0.0.1", enforceThroughput: false });
process.on("message", (msg: ToChild) => {
  if (msg.type === "stats") {
    const cpu = process.cpuUsage();
    send({
      type: "stats",
      id: msg.id,
      meter: emu.meter.snapshot(),
      cpuMs: (cpu.user + cpu.system) / 1000,
      rssBytes: process.memoryUsage().rss,
    });
  } else if (msg.type === "close") {
    void emu.close().then(() => process.exit(0));
  }
});
process.on("disconnect", () => process.exit(0));
send({ type: "ready", endpoint: emu.endpoint, key: emu.key });
