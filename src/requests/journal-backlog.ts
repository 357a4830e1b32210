// The request tracker's use of the journal (journal.ts): a record the store
// could not take is on disk before its 202 goes out, and the journal is
// written back into the store at start and whenever the outbox has drained
// (the store is back), retried until it succeeds. The journal's replay
// removes a file only once every record in it is in the store, and the
// store's create is idempotent, so records the outbox wrote already cost a
// no-op each.
import type { Logger } from 'pino';
import type { RequestRecord } from '../store/store.js';
import { JournalFullError, type Journal } from './journal.js';

/** A replay that failed (the store is still away) is tried again this much later. */
const REPLAY_RETRY_MS = 1_000;

export class JournalBacklog {
  readonly #journal: Journal;
  readonly #write: (record: RequestRecord) => Promise<void>;
  readonly #logger: Logger;
  /** Ids of records journaled by this process and not yet known to be in the store. */
  readonly #onDisk = new Set<string>();
  #replayed = false;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(journal: Journal, write: (record: RequestRecord) => Promise<void>, logger: Logger) {
    this.#journal = journal;
    this.#write = write;
    this.#logger = logger;
  }

  /** Whether the journal has been written back into the store since the start (records of a process that died may wait in it until then). */
  get replayed(): boolean {
    return this.#replayed;
  }

  /**
   * Puts the record on disk (fsynced). False when the journal could not take
   * it (full, or a failing disk): it then waits in memory only, as logged.
   */
  async append(record: RequestRecord): Promise<boolean> {
    if (this.#onDisk.has(record.id)) return true;
    try {
      await this.#journal.append(record);
    } catch (error) {
      const reason = error instanceof JournalFullError ? 'the journal is full' : 'the journal could not be written';
      this.#logger.error({ err: error, event: 'journal_refused', requestId: record.id }, `${reason}: the request record waits in memory only`);
      return false;
    }
    this.#onDisk.add(record.id);
    return true;
  }

  /** The record is in the store: nothing on disk needs to be kept for it (its file goes at the next replay). */
  written(id: string): void {
    this.#onDisk.delete(id);
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
  async close(waiting: readonly RequestRecord[]): Promise<RequestRecord[]> {
    this.#closed = true;
    clearTimeout(this.#retry);
    const lost: RequestRecord[] = [];
    for (const record of waiting) if (!(await this.append(record))) lost.push(record);
    await this.#journal.close();
    return lost;
  }
}
