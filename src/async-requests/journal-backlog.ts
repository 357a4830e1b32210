// The request tracker's use of the journal (journal.ts): a record the store
// could not take is on disk before its 202 goes out, and the journal is
// written back into the store at start and whenever the outbox has drained
// (the store is back), retried until it succeeds. The journal's replay
// removes a file only once every record in it is in the store, and the
// store's create is idempotent, so records the outbox wrote already cost a
// no-op each. Status reports (journal-lines.ts) take the same path: a
// transition replayed is idempotent too.
import type { Logger } from 'pino';
import { entryKey, type JournalEntry } from './journal-lines.js';
import { JournalFullError, type Journal } from './journal.js';

/** A replay that failed (the store is still away) is tried again this much later. */
const REPLAY_RETRY_MS = 1_000;

export class JournalBacklog {
  readonly #journal: Journal;
  readonly #write: (entry: JournalEntry) => Promise<void>;
  readonly #logger: Logger;
  /** Keys (entryKey) of entries journaled by this process and not yet known to be in the store. */
  readonly #onDisk = new Set<string>();
  #replayed = false;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(journal: Journal, write: (entry: JournalEntry) => Promise<void>, logger: Logger) {
    this.#journal = journal;
    this.#write = write;
    this.#logger = logger;
  }

  /** Whether the journal has been written back into the store since the start (records of a process that died may wait in it until then). */
  get replayed(): boolean {
    return this.#replayed;
  }

  /**
   * Puts the entry on disk (fsynced). False when the journal could not take
   * it (full, or a failing disk): it then waits in memory only, as logged.
   */
  async append(record: JournalEntry): Promise<boolean> {
    const key = entryKey(record);
    if (this.#onDisk.has(key)) return true;
    try {
      await this.#journal.append(record);
    } catch (error) {
      const reason = error instanceof JournalFullError ? 'the journal is full' : 'the journal could not be written';
      this.#logger.error({ err: error, event: 'journal_refused', requestId: record.id }, `${reason}: the request record or status report waits in memory only`);
      return false;
    }
    this.#onDisk.add(key);
    return true;
  }

  /** The entry is in the store: nothing on disk needs to be kept for it (its file goes at the next replay). */
  written(entry: JournalEntry): void {
    this.#onDisk.delete(entryKey(entry));
  }

  /** Writes the journal into the store now; on failure, again a second later, until it succeeds. */
  replay(): void {
    clearTimeout(this.#retry);
    this.#retry = undefined;
    if (this.#closed) return;
    this.#journal.replay(this.#write).then(
      () => {
        this.#replayed = true;
        this.#onDisk.clear();
      },
      (error: unknown) => {
        this.#logger.debug({ err: error }, 'journal: replay failed, the store is still unavailable; retrying');
        if (this.#closed || this.#retry !== undefined) return;
        this.#retry = setTimeout(() => this.replay(), REPLAY_RETRY_MS);
        this.#retry.unref();
      },
    );
  }

  /**
   * Journals every record the store has still not taken (those not on disk
   * yet), then closes the journal: the next process to open the folder
   * replays them. Returns the records that could not be journaled.
   */
  async close(waiting: readonly JournalEntry[]): Promise<JournalEntry[]> {
    this.#closed = true;
    clearTimeout(this.#retry);
    const lost: JournalEntry[] = [];
    for (const record of waiting) if (!(await this.append(record))) lost.push(record);
    await this.#journal.close();
    return lost;
  }
}
