import { readFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";

/** Helpers shared by the benchmarks. */

/** A positive number from the environment, or the fallback; anything else is a clear error. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number; got '${raw}'`);
  return n;
}

/** Rounding for reported figures: 1, 2 or 3 decimals. */
export const round1 = (n: number): number => Math.round(n * 10) / 10;
export const round2 = (n: number): number => Math.round(n * 100) / 100;
export const round3 = (n: number): number => Math.round(n * 1000) / 1000;

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Nearest-rank percentile (p in 0–100) of unsorted values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** The version of an installed package (from node_modules under `root`). */
export function packageVersion(root: string, name: string): string {
  const file = join(root, "node_modules", name, "package.json");
  return (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
}

/** What every results file records about the machine it ran on. */
export function machineFacts(root: string) {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? "unknown",
    cpuCount: cpus.length,
    totalMemoryGb: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    azureCosmos: packageVersion(root, "@azure/cosmos"),
    date: new Date().toISOString(),
  };
}
