import { CosmosError, SubStatus } from "../errors.js";

/**
 * Provisioned throughput as a token bucket: `ruPerSecond` tokens refill continuously, the bucket holds at
 * most one second's worth. A request is admitted while the balance is positive and its charge is taken
 * afterwards (the charge is only known once the work is done), so a burst can overdraw; until the balance
 * is positive again requests get 429 with the time to wait.
 */
export class ThroughputBudget {
  private balance: number;
  private last: number;
  /** When the last throttled request was told to come back: later ones queue behind it (no thundering herd). */
  private reservedUntil = 0;
  /** Moving average of charges (RU), to size the reservation of a throttled request. */
  private averageCharge = 5;

  constructor(
    public ruPerSecond: number,
    private readonly now: () => number = () => performance.now(),
    /** What the 429's message calls the limit. */
    private readonly limit = "container's provisioned throughput",
  ) {
    this.balance = ruPerSecond;
    this.last = this.now();
  }

  private refill(): void {
    const t = this.now();
    this.balance = Math.min(this.ruPerSecond, this.balance + ((t - this.last) / 1000) * this.ruPerSecond);
    this.last = t;
  }

  /** Throws a 429 CosmosError (with x-ms-retry-after-ms) when the budget is exhausted. */
  admit(): void {
    this.refill();
    if (this.balance > 0) return;
    const t = this.now();
    // Queue the retry behind the debt and behind earlier throttled requests, like the service's
    // growing retry-after under sustained overload.
    const start = Math.max(t + (Math.max(0, -this.balance) / this.ruPerSecond) * 1000, this.reservedUntil);
    this.reservedUntil = start + (this.averageCharge / this.ruPerSecond) * 1000;
    const waitMs = Math.max(1, Math.ceil(this.reservedUntil - t));
    throw new CosmosError(
      429,
      "TooManyRequests",
      `Request rate is large: the ${this.limit} of ${this.ruPerSecond} RU/s is used up. Retry after ${waitMs} ms.`,
      SubStatus.RequestRateTooLarge,
      { "x-ms-retry-after-ms": String(waitMs) },
    );
  }

  /**
   * Changes the rate at once (an offer replace). A raise adds the extra RU/s to the current second (the new
   * throughput is usable from the next request) and forgives the debt and the waits handed out under the old
   * rate; a cut caps the balance at one second of the new rate and keeps any debt, repaid at the lower rate.
   */
  setRate(ruPerSecond: number): void {
    this.refill();
    const extra = ruPerSecond - this.ruPerSecond;
    this.ruPerSecond = ruPerSecond;
    if (extra > 0) {
      this.balance = Math.min(Math.max(this.balance, 0) + extra, ruPerSecond);
      this.reservedUntil = 0;
    } else {
      this.balance = Math.min(this.balance, ruPerSecond);
    }
  }

  charge(ru: number): void {
    this.refill();
    this.balance -= ru;
    this.averageCharge = this.averageCharge * 0.9 + ru * 0.1;
  }
}
