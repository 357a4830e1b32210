// When may an unknown request id be answered 404? Not while a record another
// instance (or worker) accepted may still be on its way to the store: during
// an outage every instance queues its records (outbox, journal) and writes
// them once the store is back, so for a while after any outage "not in the
// store" does not mean "unknown". This instance notes every failure of the
// store it sees and every interruption of the store's announcement feed
// (which all instances sharing the store see); until `windowMs` after the
// last of them, an unknown id answers 503 with Retry-After instead.
export class OutageWindow {
  readonly #windowMs: number;
  readonly #now: () => number;
  #lastOutageAt = -Infinity;

  constructor(windowMs: number, now: () => number = Date.now) {
    this.#windowMs = windowMs;
    this.#now = now;
  }

  /** The store failed, or came back from an outage: the window starts (again) now. */
  note(): void {
    this.#lastOutageAt = this.#now();
  }

  /** Milliseconds until an unknown id may be answered 404 again; 0 when it may now. */
  msRemaining(): number {
    return Math.max(0, this.#lastOutageAt + this.#windowMs - this.#now());
  }
}
