import { DevHostError } from "../errors.js";

export const WORKER_UNAVAILABLE = "WorkerUnavailable";

/**
 * No worker process has the app loaded: its load failed or timed out, and the next attempt waits out the restart
 * back-off (or is under way). HTTP answers 503 with this message and Retry-After: the request was never invoked.
 */
export class WorkerUnavailableError extends DevHostError {
  /** Seconds until the next load attempt starts (at least 1), for Retry-After. */
  readonly retryAfterSeconds: number;

  /** `reason`: why the last load failed (a sentence). */
  constructor(reason: string, retryAfterMs: number) {
    const next = Math.max(0, Math.ceil(retryAfterMs));
    super(
      `The app is not loaded: ${reason.replace(/\.?$/, ".")} The next load attempt starts ${next > 0 ? `in ${next} ms` : "now"}; retry then.`,
      { code: WORKER_UNAVAILABLE, statusCode: 503 },
    );
    this.name = "WorkerUnavailableError";
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  }
}
