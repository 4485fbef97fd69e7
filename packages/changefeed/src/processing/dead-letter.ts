import { createHash } from "node:crypto";
import type { Container } from "@azure/cosmos";

export interface DeadLetterOptions<T> {
  container: Container;
  /** The lease prefix (the processor's name). */
  processorName: string;
  leaseToken: string;
  items: T[];
  error: unknown;
  attempts: number;
  /** Wall-clock time of the dead-lettering (ms since the epoch). */
  now: number;
}

/** One dead-letter document per failed change; a deterministic id makes a repeated write a harmless 409. */
export async function deadLetter<T>(o: DeadLetterOptions<T>): Promise<void> {
  const at = new Date(o.now).toISOString();
  for (const item of o.items) {
    const doc = item as Record<string, unknown>;
    const key = JSON.stringify([
      o.processorName,
      o.leaseToken,
      doc.id ?? null,
      doc._lsn ?? null,
      doc._etag ?? null,
    ]);
    const id = createHash("sha256").update(key).digest("hex").slice(0, 40);
    try {
      await o.container.items.create({
        id,
        processor: o.processorName,
        leaseToken: o.leaseToken,
        sourceId: doc.id ?? null,
        sourceLsn: doc._lsn ?? null,
        error: o.error instanceof Error ? o.error.message : String(o.error),
        attempts: o.attempts,
        deadLetteredAt: at,
        document: item,
      });
    } catch (e) {
      if ((e as { code?: unknown }).code !== 409) throw e;
    }
  }
}
