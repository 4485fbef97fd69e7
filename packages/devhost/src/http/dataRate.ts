import type { Readable } from "node:stream";
import type { Clock } from "@cosmos-feed/core/clock";

/**
 * Kestrel's MinRequestBodyDataRate (the host's server): once `graceMs` have passed since the body was first awaited,
 * a body whose average rate since then is below `minBytesPerSecond` is cut (Kestrel answers 408). Without it, a
 * client sending a few bytes a second holds its request — and, with enough of them, every slot of the HTTP
 * throttle — for as long as node:http's requestTimeout (300 s). Time the body spends paused (the reader applying
 * back-pressure, e.g. a streaming function's proxy) is not counted, as Kestrel counts only time spent waiting for
 * the client.
 */
export interface DataRateRule {
  /** DEV_HTTP_MIN_REQUEST_BODY_DATA_RATE; 0 = no minimum. */
  minBytesPerSecond: number;
  /** DEV_HTTP_REQUEST_BODY_GRACE_MS */
  graceMs: number;
  /** DEV_HTTP_DATA_RATE_CHECK_MS: how often the rate is checked (Kestrel's heartbeat). */
  checkEveryMs: number;
  /** The dev host's clock (tests move a FakeClock). */
  clock: Clock;
}

/** Whether `bytes` in `elapsedMs` (past the grace period) is below the minimum rate. */
export function tooSlow(rule: DataRateRule, bytes: number, elapsedMs: number): boolean {
  if (rule.minBytesPerSecond <= 0 || elapsedMs <= rule.graceMs) return false;
  return (bytes * 1000) / elapsedMs < rule.minBytesPerSecond;
}

/**
 * Watches `body` (a request being read) against `rule`; `onTooSlow` runs once when it falls below the rate. Returns
 * the function that stops watching (call it when the body ended or was given up).
 */
export function watchDataRate(body: Readable, rule: DataRateRule, onTooSlow: () => void): () => void {
  if (rule.minBytesPerSecond <= 0) return () => {};
  const stopped = new AbortController();
  let bytes = 0;
  const onData = (chunk: Buffer) => {
    bytes += chunk.length;
  };
  body.on("data", onData);
  const stop = () => {
    stopped.abort();
    body.off("data", onData);
  };
  void (async () => {
    let elapsed = 0;
    let last = rule.clock.monotonicNow();
    while (!stopped.signal.aborted) {
      await rule.clock.sleep(rule.checkEveryMs, stopped.signal);
      if (stopped.signal.aborted) return;
      const now = rule.clock.monotonicNow();
      if (!body.isPaused()) elapsed += now - last;
      last = now;
      if (tooSlow(rule, bytes, elapsed)) {
        stop();
        onTooSlow();
        return;
      }
    }
  })();
  return stop;
}
