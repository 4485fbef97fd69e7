import { type MeterSnapshot, meterDelta, type RunningEmulator } from "../../packages/emulator/src/index.js";

/** Requests and RU per container (without the database prefix). */
export type Tally = Record<string, { requests: number; ru: number }>;
/** Requests and RU per container and operation kind (create, replace, query, read, changeFeed, …). */
export type KindTally = Record<string, Record<string, { requests: number; ru: number }>>;

const round2 = (n: number) => Math.round(n * 100) / 100;

/** What the emulator's RU meter counted from `before` to now, by container and kind (kinds with no request left out). */
export function meteredSince(emulator: RunningEmulator, before: MeterSnapshot): KindTally {
  const after = emulator.meter.snapshot() as MeterSnapshot;
  const out: KindTally = {};
  for (const container of Object.keys(after)) {
    const byKind = Object.entries(meterDelta(before, after, container)).filter(([, e]) => e.count !== 0);
    if (byKind.length === 0) continue;
    out[container.replace(/^cosmos-feed-app\//, "")] = Object.fromEntries(
      byKind.map(([kind, e]) => [kind, { requests: e.count, ru: round2(e.ru) }]),
    );
  }
  return out;
}

/** Adds `from` into `into`, container by container. */
export function addTally(into: Tally, from: Tally): void {
  for (const [container, e] of Object.entries(from)) {
    const row = into[container] ?? { requests: 0, ru: 0 };
    row.requests += e.requests;
    row.ru = round2(row.ru + e.ru);
    into[container] = row;
  }
}

/** A KindTally's sums per container. */
export function byContainer(kinds: KindTally): Tally {
  const out: Tally = {};
  for (const [container, byKind] of Object.entries(kinds)) {
    for (const e of Object.values(byKind)) addTally(out, { [container]: e });
  }
  return out;
}

/** Adds what the meter counted while `step` ran into `tally`, by container. */
export async function tallied<T>(
  emulator: RunningEmulator,
  tally: Tally,
  step: () => Promise<T>,
): Promise<T> {
  const before = emulator.meter.snapshot() as MeterSnapshot;
  const out = await step();
  addTally(tally, byContainer(meteredSince(emulator, before)));
  return out;
}
