import type { EventEmitter } from "node:events";
import { createClientLogger } from "@azure/logger";

/** The processor's log (`AZURE_LOG_LEVEL=info` or `setLogLevel` from @azure/logger shows it). */
export const logger = createClientLogger("cosmos-feed:changefeed");

/** Events a processor emits (all carry the lease token). A listener that throws is logged, never rethrown. */
export interface ChangeFeedProcessorEvents {
  /** This host acquired the lease and starts processing it. */
  acquired: [leaseToken: string];
  /** This host released the lease (on stop or to balance). */
  released: [leaseToken: string];
  /** Once per loss: stolen, gone, expired (the local deadline passed), container-gone, … */
  lost: [leaseToken: string, reason: string];
  /** A batch's checkpoint was written: the lease's new continuation and how many documents it covered. */
  checkpointed: [leaseToken: string, continuationToken: string, documents: number];
  /** The lease's range split: its lease was replaced by one lease per child range. */
  split: [parentToken: string, childTokens: string[]];
  /** A version-0 lease whose partition was merged away became a version-1 (EPK) lease of the same range. */
  merged: [oldToken: string, newToken: string];
  /** A batch's documents were written to the dead-letter container (the `deadLetter` error policy). */
  deadLettered: [leaseToken: string, documents: number];
  /** An error the processor handled (logged and retried); the lease token when one lease had it. */
  error: [error: unknown, leaseToken: string | undefined];
}

/**
 * Emits the processor's events from background work: a listener that throws is reported as an "error" (or
 * logged, for an "error" listener), so it never becomes an unhandled rejection or stops a loop.
 */
export class ProcessorEvents {
  constructor(
    private readonly emitter: EventEmitter<ChangeFeedProcessorEvents>,
    private readonly instanceName: string,
  ) {}

  fire<K extends keyof ChangeFeedProcessorEvents>(event: K, ...args: ChangeFeedProcessorEvents[K]): void {
    try {
      (this.emitter.emit as (e: K, ...a: ChangeFeedProcessorEvents[K]) => boolean).call(
        this.emitter,
        event,
        ...args,
      );
    } catch (e) {
      if (event === "error") logger.error(`An 'error' listener of processor ${this.instanceName} threw:`, e);
      else this.report(e, typeof args[0] === "string" ? args[0] : undefined);
    }
  }

  /** Emits "error" when someone listens; otherwise logs (an unheard "error" event would throw). */
  report(error: unknown, leaseToken: string | undefined): void {
    if (this.emitter.listenerCount("error") > 0) this.fire("error", error, leaseToken);
    else logger.error(`Processor ${this.instanceName}, lease ${leaseToken ?? "-"}:`, error);
  }
}
