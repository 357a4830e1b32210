// Puts recorded events into the deployment's trail, in the order this process was told them, off the caller's path:
// `record` queues and returns; one pump appends (chaining after the store's last entry, retried when another
// instance came first), writes the entry's log line (and hands it to `exported`: OTLP), and every `checkpointEvery` entries a signed checkpoint.
// While the store fails the queue is kept on disk (spool.ts) and retried; it is bounded, and a drop is logged.
// Why: docs/decisions/0024-one-hash-chained-audit-trail.md
import type { Logger } from 'pino';
import type { AuditTrailRecords } from '../store/audit-records.js';
import { chainAfter, parseEntry, type AuditEntry, type AuditEvent, type PendingAuditEvent } from './entry.js';
import { checkpointEvent, type CheckpointSigner } from './checkpoint.js';
import { withoutSecrets, type AuditRecorder } from './recorder.js';
import type { AuditSpool } from './spool.js';

/** The message of every audit log line: a SIEM selects them by it (or by the `audit` field). */
export const AUDIT_LOG_MESSAGE = 'audit entry';
const MAX_QUEUED = 100_000;
const MAX_RACES = 50;
const DEFAULT_RETRY_MS = 1_000;

export interface AuditAppenderOptions {
  records: AuditTrailRecords;
  logger: Logger;
  spool: AuditSpool;
  /** Signs a checkpoint every `every` entries; absent (a command, a gateway without signing keys): none. */
  checkpoints?: { every: number; sign: CheckpointSigner };
  retryMs?: number;
  /** Told every entry appended, after its log line: the OTLP log export when tracing export is on. */
  exported?: (entry: AuditEntry) => void;
}

export class AuditAppender implements AuditRecorder {
  readonly #o: AuditAppenderOptions;
  readonly #queue: PendingAuditEvent[] = [];
  #pumping: Promise<void> | undefined;
  #retry: NodeJS.Timeout | undefined;
  #spooled = false;
  #idle: Array<() => void> = [];

  constructor(options: AuditAppenderOptions) {
    this.#o = options;
  }

  /** Queues what a previous run spooled, before anything told now. */
  async start(): Promise<void> {
    this.#queue.unshift(...(await this.#o.spool.load()));
    this.#spooled = this.#queue.length > 0;
    this.#kick();
  }

  record(event: AuditEvent): void {
    if (this.#queue.length >= MAX_QUEUED) {
      this.#o.logger.error({ audit: withoutSecrets(event) }, `the audit queue holds ${MAX_QUEUED} entries the store has not taken: this one is dropped`);
      return;
    }
    this.#queue.push({ ...withoutSecrets(event), at: new Date().toISOString() });
    this.#kick();
  }

  /** Entries told but not yet in the trail. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** The entries told but not yet in the trail, oldest first. */
  pending(): readonly PendingAuditEvent[] {
    return [...this.#queue];
  }

  /** Resolves once every entry told so far is in the trail (or the store failed and they are spooled). */
  settled(): Promise<void> {
    if (this.#queue.length === 0 && !this.#pumping) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Appends one event now, waiting for it (retention cuts, commands); throws when the store fails. */
  async appendNow(event: AuditEvent): Promise<AuditEntry> {
    return this.#append({ ...withoutSecrets(event), at: new Date().toISOString() });
  }

  /** Stops retrying; what is still queued stays spooled for the next start. */
  async close(): Promise<void> {
    clearTimeout(this.#retry);
    await this.#pumping;
    if (this.#queue.length > 0) await this.#o.spool.save(this.#queue).catch(() => {});
  }

  #kick(): void {
    if (this.#pumping || this.#retry) return;
    this.#pumping = this.#pump().finally(() => {
      this.#pumping = undefined;
      if (this.#queue.length === 0 || this.#retry) for (const resolve of this.#idle.splice(0)) resolve();
    });
  }

  async #pump(): Promise<void> {
    while (this.#queue.length > 0) {
      try {
        await this.#append(this.#queue[0]!);
      } catch (error) {
        await this.#spool(error);
        return;
      }
      this.#queue.shift();
      if (this.#spooled) {
        await this.#o.spool.save(this.#queue);
        this.#spooled = this.#queue.length > 0;
      }
    }
  }

  async #spool(error: unknown): Promise<void> {
    if (!this.#spooled)
      this.#o.logger.warn({ err: error, waiting: this.#queue.length }, 'the audit trail cannot be appended to now: entries wait on disk in order');
    await this.#o.spool.save(this.#queue).catch((spoolError: unknown) => this.#o.logger.error({ err: spoolError }, 'the audit spool cannot be written'));
    this.#spooled = true;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#kick();
    }, this.#o.retryMs ?? DEFAULT_RETRY_MS).unref();
  }

  async #append(event: PendingAuditEvent): Promise<AuditEntry> {
    const entry = await this.#chain(event);
    this.#logged(entry);
    const checkpoints = this.#o.checkpoints;
    if (checkpoints && event.kind !== 'audit.checkpoint' && (entry.seq + 1) % checkpoints.every === 0) {
      await this.#chain({ ...checkpointEvent(entry, checkpoints.sign), at: new Date().toISOString() }).then(
        (checkpoint) => this.#logged(checkpoint),
        (error: unknown) => this.#o.logger.warn({ err: error, seq: entry.seq }, 'an audit checkpoint could not be written; the next one will be'),
      );
    }
    return entry;
  }

  #logged(entry: AuditEntry): void {
    this.#o.logger.info({ audit: entry }, AUDIT_LOG_MESSAGE);
    this.#o.exported?.(entry);
  }

  async #chain(event: PendingAuditEvent): Promise<AuditEntry> {
    for (let race = 0; race < MAX_RACES; race += 1) {
      const last = await this.#o.records.last();
      const previous = last ? parseEntry(last.text) : null;
      if (previous === undefined) throw new Error('the last audit entry does not read: run `gatehouse audit verify`');
      const entry = chainAfter(previous, event);
      if (await this.#o.records.appendAfter(previous?.hash ?? null, entry.hash, JSON.stringify(entry))) return entry;
    }
    throw new Error(`the audit trail changed under this append ${MAX_RACES} times in a row`);
  }
}
