import type { RuMeter } from "@cosmos-feed/emulator";
import { masterKeyHeaders } from "@cosmos-feed/emulator";
import type { RuTotals } from "./rates.js";

/**
 * Where the RU meter is read: the embedded emulator in this process (`emu.meter`), another emulator process through
 * its signed `GET /_emulator/meter`, or nowhere (a real Azure account has no meter: the panel says so).
 */
export type MeterSource =
  | { kind: "available"; describe: string; read(): Promise<RuTotals> }
  | { kind: "unavailable"; reason: string };

type Snapshot = Record<string, Record<string, { ru?: unknown }>>;

/** Sums a meter snapshot (`{ "db/c": { read: {count, ru, throttled}, … } }`) per container. */
export function meterTotals(snapshot: unknown): RuTotals {
  const out: RuTotals = {};
  if (typeof snapshot !== "object" || snapshot === null) return out;
  for (const [container, kinds] of Object.entries(snapshot as Snapshot)) {
    if (typeof kinds !== "object" || kinds === null) continue;
    let ru = 0;
    for (const entry of Object.values(kinds)) {
      const v = (entry as { ru?: unknown })?.ru;
      if (typeof v === "number" && Number.isFinite(v)) ru += v;
    }
    out[container] = ru;
  }
  return out;
}

export function inProcessMeter(meter: RuMeter): MeterSource {
  return {
    kind: "available",
    describe: "embedded emulator",
    read: async () => meterTotals(meter.snapshot()),
  };
}

/** `GET <endpoint>/_emulator/meter`, signed with the account key as every emulator request. */
export function remoteMeter(
  endpoint: string,
  key: string,
  timeoutMs: number,
): Extract<MeterSource, { kind: "available" }> {
  return {
    kind: "available",
    describe: `emulator at ${endpoint}`,
    read: async () => {
      const res = await fetch(new URL("_emulator/meter", endpoint), {
        headers: masterKeyHeaders(key, "GET", "/_emulator/meter"),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      if (res.status !== 200) {
        throw new Error(
          `${endpoint} answered ${res.status} to GET /_emulator/meter: it is not this project's emulator (${text.slice(0, 120)})`,
        );
      }
      return meterTotals(JSON.parse(text));
    },
  };
}

/** Loopback or a private address: possibly an emulator. A public host (`*.documents.azure.com`) never is. */
export function mayBeEmulator(endpoint: string): boolean {
  let host: string;
  try {
    host = new URL(endpoint).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return false;
  }
  return (
    host === "localhost" ||
    host === "::1" ||
    /^127\./.test(host) ||
    /^10\./.test(host) ||
    /^192\.168\./.test(host) ||
    /^172\.(1[6-9]|2\d|3[01])\./.test(host) ||
    host.endsWith(".local") ||
    !host.includes(".")
  );
}
