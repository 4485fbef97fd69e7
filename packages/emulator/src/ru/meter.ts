/** What a request was, for the RU meter. */
export type OperationKind =
  | "read"
  | "create"
  | "replace"
  | "upsert"
  | "delete"
  | "patch"
  | "query"
  | "readFeed"
  | "changeFeed"
  | "batch"
  | "bulk"
  | "metadata";

/** One container's totals for one kind of operation. */
export interface MeterEntry {
  /** Requests served (including those answered 304 or 4xx after being charged). */
  count: number;
  /** Request units charged. */
  ru: number;
  /** Requests refused with 429 before any work was done. */
  throttled: number;
}

/** Per-container (`db/container`), per-operation-kind RU totals, kept in process for the tuner and the bench. */
export class RuMeter {
  private readonly byContainer = new Map<string, Map<OperationKind, MeterEntry>>();

  private entry(container: string, kind: OperationKind): MeterEntry {
    let kinds = this.byContainer.get(container);
    if (!kinds) {
      kinds = new Map();
      this.byContainer.set(container, kinds);
    }
    let e = kinds.get(kind);
    if (!e) {
      e = { count: 0, ru: 0, throttled: 0 };
      kinds.set(kind, e);
    }
    return e;
  }

  /** Counts one request of `kind` on `container` ("db/container") charged `ru` request units. */
  record(container: string, kind: OperationKind, ru: number): void {
    const e = this.entry(container, kind);
    e.count++;
    e.ru += ru;
  }

  /** Counts one request of `kind` on `container` refused with 429 before any work. */
  recordThrottled(container: string, kind: OperationKind): void {
    this.entry(container, kind).throttled++;
  }

  /** A copy: `{ "db/container": { read: {count, ru, throttled}, ... } }`. */
  snapshot(): Record<string, Partial<Record<OperationKind, MeterEntry>>> {
    const out: Record<string, Partial<Record<OperationKind, MeterEntry>>> = {};
    for (const [container, kinds] of this.byContainer) {
      const row: Partial<Record<OperationKind, MeterEntry>> = {};
      for (const [kind, e] of kinds)
        row[kind] = { count: e.count, ru: Math.round(e.ru * 100) / 100, throttled: e.throttled };
      out[container] = row;
    }
    return out;
  }

  /** Forgets every total. */
  reset(): void {
    this.byContainer.clear();
  }
}

/** A {@link RuMeter.snapshot} (or a copy of one, e.g. sent from a child process): per container, per kind. */
export type MeterSnapshot<K extends string = OperationKind> = Record<
  string,
  Partial<Record<K, { count: number; ru: number }>>
>;

/**
 * Requests and RU of one container (`db/container`) by operation kind between two snapshots; kinds that did not
 * move are left out.
 */
export function meterDelta<K extends string = OperationKind>(
  before: MeterSnapshot<K>,
  after: MeterSnapshot<K>,
  container: string,
): Partial<Record<K, { count: number; ru: number }>> {
  const out: Partial<Record<K, { count: number; ru: number }>> = {};
  const a = after[container] ?? {};
  const b = before[container] ?? {};
  for (const kind of Object.keys(a) as K[]) {
    const count = (a[kind]?.count ?? 0) - (b[kind]?.count ?? 0);
    const ru = (a[kind]?.ru ?? 0) - (b[kind]?.ru ?? 0);
    if (count !== 0 || ru !== 0) out[kind] = { count, ru };
  }
  return out;
}
