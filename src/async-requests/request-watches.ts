// Long polls hear of status changes here: one subscription to the store's
// feed of changes, fanned out to the watches open on this instance, instead
// of one subscription per poll or a loop reading the store. The feed is
// pushed (pub/sub on Redis, a direct call in memory), so nothing here polls:
// the only timers are each wait's own deadline.
import type { RequestRecordStore, TerminalStatus } from '../store/store.js';

/**
 * What a watch reports: the new status, `recheck` when changes may have been
 * missed (the store's feed of changes was interrupted: read the record
 * again), or null when the time ran out or the watch was closed.
 */
export type WatchEvent = TerminalStatus | 'recheck' | null;

export interface RequestWatch {
  /**
   * Resolves at the next change, or with one that came since the watch was
   * opened and was not reported yet, or with null after `timeoutMs`. One
   * call at a time.
   */
  next(timeoutMs: number): Promise<WatchEvent>;
  /** Ends the watch; a `next` under way resolves null. Idempotent. */
  close(): void;
  /** Closed by `close()`, or by every watch being ended: `next` answers null at once. */
  readonly closed: boolean;
}

export class RequestWatches {
  readonly #byId = new Map<string, Set<Watch>>();
  readonly #maxWatches: number;
  readonly #unsubscribe: Array<() => void>;
  #count = 0;
  #ended = false;

  constructor(store: RequestRecordStore, maxWatches: number) {
    this.#maxWatches = maxWatches;
    this.#unsubscribe = [
      store.onRequestStatusChanged(({ id, status }) => this.#notify(id, status)),
      // The Redis store's feed of status changes runs on the connection whose
      // interruption this reports: changes may have been missed meanwhile.
      store.onRevocationFeedResumed(() => this.#notifyAll('recheck')),
    ];
  }

  /** Open watches. */
  get size(): number {
    return this.#count;
  }

  /**
   * A watch on one request, reporting its changes from now on. Null when
   * `maxWatches` are open or every watch was ended.
   */
  open(id: string): RequestWatch | null {
    if (this.#ended || this.#count >= this.#maxWatches) return null;
    const watch = new Watch(() => this.#forget(id, watch));
    let watches = this.#byId.get(id);
    if (watches === undefined) {
      watches = new Set();
      this.#byId.set(id, watches);
    }
    watches.add(watch);
    this.#count += 1;
    return watch;
  }

  /**
   * Waits for the next change of one request, at most `timeoutMs`: the new
   * status, `recheck`, or null (time out, too many waiters, ended, aborted).
   */
  async waitForChange(id: string, timeoutMs: number, signal?: AbortSignal): Promise<WatchEvent> {
    const watch = this.open(id);
    if (watch === null) return null;
    const abort = () => watch.close();
    signal?.addEventListener('abort', abort, { once: true });
    try {
      return signal?.aborted ? null : await watch.next(timeoutMs);
    } finally {
      signal?.removeEventListener('abort', abort);
      watch.close();
    }
  }

  /** Closes every watch (their waits answer null) and opens none after. */
  endAll(): void {
    this.#ended = true;
    for (const watches of [...this.#byId.values()]) for (const watch of [...watches]) watch.close();
  }

  /** Ends every watch and stops listening to the store. */
  close(): void {
    this.endAll();
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
  }

  #notify(id: string, status: TerminalStatus): void {
    const watches = this.#byId.get(id);
    if (watches === undefined) return;
    for (const watch of watches) watch.notify(status);
  }

  #notifyAll(event: 'recheck'): void {
    for (const watches of this.#byId.values()) for (const watch of watches) watch.notify(event);
  }

  #forget(id: string, watch: Watch): void {
    const watches = this.#byId.get(id);
    if (watches === undefined || !watches.delete(watch)) return;
    this.#count -= 1;
    if (watches.size === 0) this.#byId.delete(id);
  }
}

class Watch implements RequestWatch {
  readonly #onClose: () => void;
  /** A change that came while nobody was waiting in `next`. */
  #unreported: Exclude<WatchEvent, null> | undefined;
  #settle: ((event: WatchEvent) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(onClose: () => void) {
    this.#onClose = onClose;
  }

  get closed(): boolean {
    return this.#closed;
  }

  notify(event: Exclude<WatchEvent, null>): void {
    if (this.#closed) return;
    if (this.#settle !== undefined) {
      this.#settle(event);
      return;
    }
    // A terminal status is final and outranks a mere "recheck".
    if (this.#unreported === undefined || this.#unreported === 'recheck') this.#unreported = event;
  }

  next(timeoutMs: number): Promise<WatchEvent> {
    if (this.#settle !== undefined) throw new Error('RequestWatch.next is already waiting');
    if (this.#closed) return Promise.resolve(null);
    if (this.#unreported !== undefined) {
      const event = this.#unreported;
      this.#unreported = undefined;
      return Promise.resolve(event);
    }
    return new Promise<WatchEvent>((resolve) => {
      this.#settle = (event) => {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#settle = undefined;
        resolve(event);
      };
      this.#timer = setTimeout(() => this.#settle?.(null), Math.max(0, timeoutMs));
      // The client's open request keeps the process busy, not this timer.
      this.#timer.unref();
    });
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#settle?.(null);
    this.#onClose();
  }
}
