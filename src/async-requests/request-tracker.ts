// The one way the gateway reads and changes request records, between the store and its users (the 202 capture, the
// status endpoint, the internal API, the reconciler).
//
// Invariants: a record promised by a 202 is never lost to a store outage (it waits in the outbox, in order, and with
// a journal is on disk before the 202 goes out); store failures leave as one `store_unavailable` (503) with the
// store's Retry-After; an unknown id is not called unknown while records may be on their way (outage-window.ts); a
// report answered `applied` is confirmed by a replica or queued the same way (status-reports.ts); long polls'
// watches (request-watches.ts) ride one store subscription.
// Why: docs/decisions/0012-a-202-is-a-promise-kept.md
import type { Logger } from 'pino';
import { DEFAULT_UNKNOWN_AFTER_OUTAGE_S } from '../config/defaults.js';
import { gatehouseError, type GatehouseError } from '../core/errors.js';
import type { Metrics } from '../observability/metrics.js';
import { storeUnavailable, unconfirmedOutcome } from '../store/store-unavailable.js';
import type { RequestRecord, RequestRecordStore, TerminalStatus, TransitionOutcome } from '../store/store.js';
import { JournalBacklog } from './journal-backlog.js';
import { isStatusReport, type JournalEntry } from './journal-lines.js';
import type { Journal } from './journal.js';
import { OutageWindow } from './outage-window.js';
import { Outbox } from './outbox.js';
import { RequestWatches, type RequestWatch, type WatchEvent } from './request-watches.js';
import { writeStatusReport } from './status-reports.js';

/** What became of a record handed to `record()`. */
export type RecordOutcome =
  /** In the store. */
  | 'recorded'
  /** The store is down: waiting in the outbox. */
  | 'queued'
  /** The store is down and the outbox full: lost (logged, counted). */
  | 'dropped'
  /** A record with that id exists already; it is left as it is. */
  | 'duplicate';

/** Who asked for a transition (a label of the transitions metric). */
export type TransitionSource = 'internal_api' | 'upstream';

export interface RequestTrackerOptions {
  store: RequestRecordStore;
  metrics: Metrics;
  logger: Logger;
  /** `requests.retentionS` in ms: how long a record is kept after its last change. */
  retentionMs: number;
  outboxMaxEntries: number;
  /** Open watches (long polls) this instance keeps at most; past it, polls answer at once. */
  maxWatches?: number;
  outboxRetryDelayMs?: { initial: number; max: number };
  /** Where queued records go before their 202 (`requests.journalDir`); none: memory only. */
  journal?: Journal;
  /** `requests.unknownAfterOutageS` in ms; its default when absent. */
  unknownAfterOutageMs?: number;
  now?: () => number;
}

/** A long poll holds a watch, a timer and a socket: bounded well below what the process can hold. */
const DEFAULT_MAX_WATCHES = 10_000;

export class RequestTracker {
  readonly #store: RequestRecordStore;
  readonly #metrics: Metrics;
  readonly #logger: Logger;
  readonly #retentionMs: number;
  readonly #outbox: Outbox;
  readonly #watches: RequestWatches;
  readonly #backlog: JournalBacklog | undefined;
  readonly #outages: OutageWindow;
  readonly #stopHearingResumes: () => void;

  constructor(options: RequestTrackerOptions) {
    this.#store = options.store;
    this.#metrics = options.metrics;
    this.#logger = options.logger.child({ component: 'requests' });
    this.#retentionMs = options.retentionMs;
    this.#outbox = new Outbox({
      maxEntries: options.outboxMaxEntries,
      write: (record) => this.#writeQueued(record),
      // The store is back: what the journal holds (ours, and a dead process's) goes in too.
      drained: () => this.#backlog?.replay(),
      metrics: options.metrics,
      logger: this.#logger,
      ...(options.outboxRetryDelayMs && {
        initialRetryDelayMs: options.outboxRetryDelayMs.initial,
        maxRetryDelayMs: options.outboxRetryDelayMs.max,
      }),
    });
    this.#watches = new RequestWatches(options.store, options.maxWatches ?? DEFAULT_MAX_WATCHES);
    this.#outages = new OutageWindow(options.unknownAfterOutageMs ?? DEFAULT_UNKNOWN_AFTER_OUTAGE_S * 1000, options.now);
    // Every instance sharing the store hears its feed resume after an outage,
    // also one that had no request to fail meanwhile.
    this.#stopHearingResumes = options.store.onRevocationFeedResumed(() => this.#outages.note());
    if (options.journal) {
      this.#backlog = new JournalBacklog(options.journal, (record) => this.#writeQueued(record), this.#logger);
      this.#backlog.replay();
    }
  }

  /** Records waiting in the outbox for the store. */
  get queued(): number {
    return this.#outbox.size;
  }

  /** Open watches (long polls under way). */
  get watching(): number {
    return this.#watches.size;
  }

  /**
   * Records a new pending request. Never rejects: a store failure queues the
   * record in the outbox, and a full outbox is reported (`dropped`).
   */
  async record(record: RequestRecord): Promise<RecordOutcome> {
    if (this.#outbox.has(record.id)) return 'duplicate';
    // While records wait, new ones queue behind them: the store receives
    // them in the order their 202s went out.
    if (this.#outbox.size > 0) return this.#queue(record);
    try {
      return (await this.#store.createRequest(record, this.#retentionMs)) ? 'recorded' : 'duplicate';
    } catch (error) {
      // Whatever the failure — a connection lost, READONLY from a demoted
      // master, CLUSTERDOWN, LOADING, a timeout — the record is retried, never dropped.
      this.#outages.note();
      this.#logger.warn({ err: error, requestId: record.id }, 'request record not written: the store is unavailable; it waits in the outbox');
      return this.#queue(record);
    }
  }

  /**
   * What to answer for an id the store does not hold: 404, unless a record
   * with it may still be on its way to the store (after an outage, or before
   * the journal has been written back since the start); then 503 with the
   * time until that is known.
   */
  unknown(): GatehouseError {
    // Until the feed resumes, the outage has not ended for this instance, whatever its reads say:
    // another instance's records are still on their way (the window starts again at the resume).
    if (this.#store.revocationFeedInterrupted?.() === true) this.#outages.note();
    const remainingMs = this.#outages.msRemaining();
    const unsure = remainingMs > 0 || (this.#backlog !== undefined && !this.#backlog.replayed);
    if (!unsure) return gatehouseError('request_not_found');
    return storeUnavailable(new Error('records accepted during a store outage may still be on their way'), remainingMs);
  }

  /**
   * The record, or null when there is none (never made, or expired). Rejects
   * with `store_unavailable` whenever the store does not answer — also for a
   * record in this instance's outbox: a write that timed out on our side may
   * have landed after all and been completed through another instance since,
   * so "pending" from memory could be a wrong answer, and 503 never is. Once
   * the store answers, a record it does not hold yet but the outbox does is
   * answered from the outbox (pending, and rightly so: nobody can have
   * changed a record the store has never seen), never as unknown.
   */
  async get(id: string): Promise<RequestRecord | null> {
    let stored: RequestRecord | null;
    try {
      stored = await this.#store.getRequest(id);
    } catch (error) {
      this.#outages.note();
      throw storeUnavailable(error);
    }
    // A report acknowledged but not yet confirmed by the store is the request's state already.
    const report = this.#outbox.report(id);
    if (stored?.status === 'pending' && report) return { ...stored, status: report.status, updatedAt: report.reportedAt };
    return stored ?? this.#outbox.get(id) ?? null;
  }

  /** Whether this record waits in the outbox for the store. */
  isQueued(id: string): boolean {
    return this.#outbox.has(id);
  }

  /**
   * Moves a pending record to a terminal state (atomically, in the store).
   * A record still waiting in the outbox must be written first: until it is,
   * the transition is refused as `store_unavailable`, never as unknown.
   * `applied` means kept: confirmed by the store, or made on its master and
   * queued (journal, outbox) until it is confirmed; otherwise it rejects.
   */
  async transition(id: string, status: TerminalStatus, source: TransitionSource): Promise<TransitionOutcome> {
    if (this.#outbox.has(id) || this.#outbox.report(id)) {
      await this.#outbox.drain();
      if (this.#outbox.has(id)) {
        this.#metrics.statusTransitions.inc({ source, outcome: 'store_unavailable' });
        // Its write has just failed: the store's error says when to retry.
        throw storeUnavailable(this.#outbox.lastFailure ?? new Error('the record still waits in the outbox'));
      }
    }
    // An earlier report still waits: it goes first, so it decides (a terminal state never changes).
    const waiting = this.#outbox.report(id);
    let outcome: TransitionOutcome | undefined = waiting && (waiting.status === status ? 'already_applied' : 'conflict');
    try {
      outcome ??= await this.#store.transitionRequest(id, status, this.#retentionMs);
    } catch (error) {
      this.#outages.note();
      outcome = unconfirmedOutcome<TransitionOutcome>(error);
      // Made on the master but not confirmed: kept like a 202's record, or not acknowledged at all.
      if (outcome === undefined || !(await this.#keep({ kind: 'status_report', id, status, reportedAt: Date.now() }))) {
        this.#metrics.statusTransitions.inc({ source, outcome: 'store_unavailable' });
        throw storeUnavailable(error);
      }
      this.#logger.warn({ err: error, requestId: id, status }, 'status report not yet confirmed by a replica: it waits in the outbox');
    }
    this.#metrics.statusTransitions.inc({ source, outcome });
    const log = outcome === 'applied' ? 'info' : 'debug';
    this.#logger[log]({ event: 'request_transition', requestId: id, status, source, outcome }, 'request status transition');
    return outcome;
  }

  /**
   * Opens a watch on one request: from now on, its changes (from any
   * instance sharing the store) are reported, including one that comes
   * before the first `next`. Open it before reading the record, so a change
   * between the read and the wait is not missed. Null when too many watches
   * are open: the caller answers at once instead of waiting.
   */
  watch(id: string): RequestWatch | null {
    return this.#watches.open(id);
  }

  /** See RequestWatches.waitForChange. */
  waitForChange(id: string, timeoutMs: number, signal?: AbortSignal): Promise<WatchEvent> {
    return this.#watches.waitForChange(id, timeoutMs, signal);
  }

  /**
   * Ends every long poll at once (they answer with what they know), so that
   * closing the listeners need not wait for them. New watches are refused.
   */
  endWatches(): void {
    this.#watches.endAll();
  }

  /**
   * Ends the watches, stops listening to the store and makes one last
   * attempt to write what waits in the outbox; whatever is still there then
   * goes to the journal (the next start replays it). Only what the journal
   * cannot take either (or all of it, without a journal) is lost with this
   * process, and logged as such.
   */
  async close(): Promise<void> {
    this.#watches.close();
    this.#stopHearingResumes();
    if (this.#outbox.size > 0) await this.#outbox.drain();
    const waiting = this.#outbox.close();
    const lost = this.#backlog ? await this.#backlog.close(waiting) : waiting;
    if (lost.length > 0) {
      this.#logger.error(
        { event: 'outbox_lost', records: lost.length, requestIds: lost.slice(0, 100).map((record) => record.id) },
        'request records and status reports still waiting for the store are lost with this process',
      );
    }
  }

  /** Journal first (the answer waits for the fsync), then the outbox, which writes it as soon as it can; false: neither took it. */
  async #keep(entry: JournalEntry): Promise<boolean> {
    const onDisk = (await this.#backlog?.append(entry)) ?? false;
    // Full outbox, but on disk: the journal's replay writes it.
    return this.#outbox.enqueue(entry) || onDisk;
  }

  async #queue(record: RequestRecord): Promise<RecordOutcome> {
    if (await this.#keep(record)) return 'queued';
    this.#metrics.outboxDropped.inc();
    this.#logger.error(
      { event: 'outbox_full', requestId: record.id, route: record.route, outboxSize: this.#outbox.size },
      'outbox full while the store is unavailable: request record dropped; its status endpoint will not find it',
    );
    return 'dropped';
  }

  async #writeQueued(record: JournalEntry): Promise<void> {
    if (isStatusReport(record)) {
      await writeStatusReport(this.#store, record, this.#retentionMs, this.#logger);
      this.#backlog?.written(record);
      return;
    }
    const created = await this.#store.createRequest(record, this.#retentionMs);
    this.#backlog?.written(record);
    // Already there: an earlier attempt that timed out on our side landed after all.
    if (!created) this.#logger.debug({ requestId: record.id }, 'outbox: record was already in the store');
  }
}
