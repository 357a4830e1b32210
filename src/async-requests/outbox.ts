// Request records that could not be written because the store was down. A
// client holding a 202 must later find its request, so the record waits here,
// in memory, and is written when the store answers again — in the order the
// 202s went out, so records are never reordered by a recovery. Status
// reports acknowledged before a replica held them wait here too, in the same
// line (journal-lines.ts), so a report is never written before its record.
//
// Bounded: a store that stays down must not turn into unbounded memory. When
// full, the newest record is refused (the caller logs and counts it); the
// older ones, whose clients have waited longest, keep their places.
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.js';
import type { RequestRecord } from '../store/store.js';
import { entryKey, isStatusReport, statusReportKey, type JournalEntry, type StatusReport } from './journal-lines.js';

export interface OutboxOptions {
  maxEntries: number;
  /**
   * Writes one entry to the store. Resolves when it is there (written now, or
   * found there already: an earlier attempt may have succeeded although it
   * timed out on our side); rejects when the store still does not answer.
   */
  write: (entry: JournalEntry) => Promise<void>;
  metrics: Metrics;
  logger: Logger;
  /** First retry delay after a failed write; doubles up to `maxRetryDelayMs`. */
  initialRetryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** Told after a drain that wrote records and left the outbox empty. */
  drained?: () => void;
}

const DEFAULT_INITIAL_RETRY_DELAY_MS = 50;
/** A store back for a second should not wait long for its backlog; a fleet retrying every second is cheap. */
const DEFAULT_MAX_RETRY_DELAY_MS = 1_000;

export class Outbox {
  readonly #options: OutboxOptions;
  readonly #initialDelayMs: number;
  readonly #maxDelayMs: number;
  /** FIFO by entryKey; the Map keeps insertion order and finds an entry in O(1). */
  readonly #queue = new Map<string, JournalEntry>();
  #delayMs: number;
  #timer: NodeJS.Timeout | undefined;
  /** The drain under way, shared by everyone who wants one (single writer: order is kept). */
  #draining: Promise<void> | undefined;
  #lastFailure: unknown;
  #closed = false;

  constructor(options: OutboxOptions) {
    this.#options = options;
    this.#initialDelayMs = options.initialRetryDelayMs ?? DEFAULT_INITIAL_RETRY_DELAY_MS;
    this.#maxDelayMs = options.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS;
    this.#delayMs = this.#initialDelayMs;
    options.metrics.outboxSize.set(0);
  }

  get size(): number {
    return this.#queue.size;
  }

  /** The waiting record with this id, if any. */
  get(id: string): RequestRecord | undefined {
    const record = this.#queue.get(id);
    return record === undefined || isStatusReport(record) ? undefined : { ...record };
  }

  /** Whether the record with this id waits. */
  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /** The waiting status report for this id, if any. */
  report(id: string): StatusReport | undefined {
    const report = this.#queue.get(statusReportKey(id));
    return report !== undefined && isStatusReport(report) ? { ...report } : undefined;
  }

  /** What the last failed write threw, until a drain empties the outbox. */
  get lastFailure(): unknown {
    return this.#lastFailure;
  }

  /**
   * Queues a record and makes sure a drain is scheduled. Returns false when
   * the outbox is full (or closed) and the record was not kept; the caller
   * reports it, since only the caller knows which request it belonged to.
   */
  enqueue(entry: JournalEntry): boolean {
    if (this.#closed || this.#queue.size >= this.#options.maxEntries) return false;
    // An id queued twice (an upstream repeating itself while the store is
    // down) keeps its first record and place, as the store would; a report, its first outcome.
    const key = entryKey(entry);
    if (!this.#queue.has(key)) this.#queue.set(key, { ...entry });
    this.#options.metrics.outboxSize.set(this.#queue.size);
    this.#schedule();
    return true;
  }

  /**
   * Writes what is waiting, oldest first, now. Resolves when the outbox is
   * empty or a write failed (a retry is then scheduled); never rejects.
   */
  drain(): Promise<void> {
    if (this.#draining === undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#draining = this.#drainInOrder().finally(() => {
        this.#draining = undefined;
        // Left over: a write failed, or records arrived after the loop ended.
        if (this.#queue.size > 0) this.#schedule();
      });
    }
    return this.#draining;
  }

  /**
   * Stops retrying. What is still waiting is reported and returned: the
   * caller may try one last drain first (see RequestTracker.close).
   */
  close(): JournalEntry[] {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    return [...this.#queue.values()];
  }

  async #drainInOrder(): Promise<void> {
    let written = 0;
    for (const [key, entry] of this.#queue) {
      try {
        await this.#options.write(entry);
      } catch (error) {
        this.#lastFailure = error;
        this.#delayMs = Math.min(this.#delayMs * 2, this.#maxDelayMs);
        this.#options.logger.debug({ err: error, written, waiting: this.#queue.size, retryInMs: this.#delayMs }, 'outbox: the store is still unavailable');
        return;
      }
      // Deleting the entry being visited is safe while iterating a Map; later
      // entries (queued meanwhile) are still visited, in order.
      this.#queue.delete(key);
      this.#options.metrics.outboxSize.set(this.#queue.size);
      written += 1;
    }
    this.#delayMs = this.#initialDelayMs;
    this.#lastFailure = undefined;
    if (written > 0) {
      this.#options.logger.info({ written }, 'outbox drained: every waiting request record is in the store');
      this.#options.drained?.();
    }
  }

  /** At most one timer; a drain under way reschedules itself when it ends (see drain). */
  #schedule(): void {
    if (this.#closed || this.#timer !== undefined || this.#draining !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.drain();
    }, this.#delayMs);
    // Housekeeping must not keep a finished process alive; close() reports what is left.
    this.#timer.unref();
  }
}
