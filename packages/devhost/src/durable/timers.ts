import type { Clock } from "@cosmos-feed/core/clock";
import type { TimerDoc } from "./documents.js";

/**
 * Durable timers on one host: timer documents become due at `fireAtMs` on the hub's clock. Only timers due within
 * the horizon are held in memory (the feed hands over new ones, the pending-work scan the rest as their time comes
 * near), so a timer of any length costs nothing until then, and nothing relies on one long setTimeout (Node caps
 * those at 2^31−1 ms ≈ 24.8 days and fires them at once beyond it). One sleep on the clock at a time: the earliest.
 */
export class TimerService {
  private readonly due = new Map<string, TimerDoc>();
  private wakeUp = new AbortController();
  private running = false;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    /** How far ahead a timer is held in memory (ms); later ones are left to the scan. */
    private readonly horizonMs: number,
    private readonly fire: (doc: TimerDoc) => void,
  ) {}

  private key(doc: TimerDoc) {
    return `${doc.pk}/${doc.id}`;
  }

  /** Holds a timer if it is due within the horizon (idempotent); false when left for a later scan. */
  offer(stored: TimerDoc): boolean {
    if (this.stopped) return false;
    // Timer documents of a task hub written before `fireAtMs` existed carry only `fireAt`.
    const doc = Number.isFinite(stored.fireAtMs)
      ? stored
      : { ...stored, fireAtMs: Date.parse(stored.fireAt) };
    if (doc.fireAtMs > this.clock.now() + this.horizonMs) return false;
    const key = this.key(doc);
    if (this.due.has(key)) return true;
    this.due.set(key, doc);
    this.kick();
    return true;
  }

  /** Forgets a timer (canceled, fired elsewhere, instance ended). */
  cancel(pk: string, id: string): void {
    this.due.delete(`${pk}/${id}`);
  }

  /** Forgets every timer of a partition (its instance ended or was purged). */
  cancelPartition(pk: string): void {
    for (const k of this.due.keys()) if (k.startsWith(`${pk}/`)) this.due.delete(k);
  }

  get size(): number {
    return this.due.size;
  }

  stop(): void {
    this.stopped = true;
    this.due.clear();
    this.wakeUp.abort();
  }

  private kick() {
    if (this.running) {
      // The loop sleeps until its earliest timer; a new earlier one must shorten that.
      this.wakeUp.abort();
      return;
    }
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      while (!this.stopped && this.due.size > 0) {
        const now = this.clock.now();
        let next = Number.POSITIVE_INFINITY;
        for (const [key, doc] of this.due) {
          if (doc.fireAtMs <= now) {
            this.due.delete(key);
            try {
              this.fire(doc);
            } catch {
              // fire only hands the timer to the dispatcher; a throw there must not stop the other timers
            }
          } else if (doc.fireAtMs < next) next = doc.fireAtMs;
        }
        if (this.due.size === 0) break;
        this.wakeUp = new AbortController();
        await this.clock.sleep(Math.min(next - now, this.horizonMs), this.wakeUp.signal);
      }
    } finally {
      this.running = false;
      if (!this.stopped && this.due.size > 0) this.kick();
    }
  }
}
