// The audit trail a command writes to: the store's stream when Redis is configured, else the local file; the
// entries it records are in the trail before the command ends, or it says they are not.
import { pino } from 'pino';
import { AuditAppender } from '../audit/appender.js';
import { auditRecordsOf } from '../audit/open-trail.js';
import { operatorActor, type AuditRecorder } from '../audit/recorder.js';
import { AuditSpool, commandSpoolOf, spoolCommandEvents } from '../audit/spool.js';
import type { AuditTrailRecords } from '../store/audit-records.js';
import type { AuditActor } from '../audit/entry.js';
import type { AuditConfig } from '../config/schema.js';
import type { AuditStore } from '../store/store.js';
import type { StoreConfig } from '../config/schema.js';
import { writeLine, type OutputIo } from './command.js';
import { StoreUnreachable, withStore } from './store-session.js';

export interface CommandAudit {
  recorder: AuditRecorder;
  /** The OS user and host running the command. */
  actor: AuditActor;
}

/** Runs `use` with a recorder over `store`'s trail (or `config.file`'s), and waits until what it recorded is appended. */
export async function withCommandAudit<T>(
  io: OutputIo,
  config: AuditConfig | undefined,
  store: AuditStore,
  use: (audit: CommandAudit) => Promise<T>,
): Promise<T> {
  if (!config) return use({ recorder: { record: () => {} }, actor: operatorActor() });
  const appender = new AuditAppender({
    records: auditRecordsOf(config, store),
    logger: pino({ enabled: false }),
    spool: new AuditSpool(undefined),
    retryMs: 60_000,
  });
  try {
    return await use({ recorder: appender, actor: operatorActor() });
  } finally {
    await appender.settled();
    await appender.close();
    const pending = appender.pending();
    if (pending.length > 0) {
      // Kept on disk for the next gateway start to append, in order: the change itself is made.
      await spoolCommandEvents(config.spoolFile, pending).then(
        () =>
          writeLine(
            io.stderr,
            `the store does not answer: ${pending.length} audit entries wait in ${commandSpoolOf(config.spoolFile)}; the next gateway start appends them`,
          ),
        (error: unknown) => writeLine(io.stderr, `warning: ${pending.length} audit entries could not be kept (${(error as Error).message})`),
      );
    }
  }
}

/** withCommandAudit over the configured store's trail (opened for it), or the local file's without Redis. */
export function withConfiguredAudit<T>(
  io: OutputIo,
  config: { audit?: AuditConfig | undefined; store?: StoreConfig | undefined },
  use: (audit: CommandAudit) => Promise<T>,
): Promise<T> {
  const { audit, store } = config;
  if (!store?.url) return withCommandAudit(io, audit, {}, use);
  return withStore(store, 'the audit trail lives there', (opened) => withCommandAudit(io, audit, opened, use)).catch((error: unknown) => {
    // The users live in the file: a change needs no store. Its entries wait on disk until a gateway appends them.
    if (!(error instanceof StoreUnreachable)) throw error;
    return withCommandAudit(io, audit, { auditTrail: UNREACHABLE_TRAIL }, use);
  });
}

/** The deployment's trail while its store does not answer: every append fails, so the appender keeps the entries. */
const UNREACHABLE_TRAIL: AuditTrailRecords = {
  last: () => Promise.reject(new Error('the store does not answer')),
  appendAfter: () => Promise.reject(new Error('the store does not answer')),
  all: () => Promise.reject(new Error('the store does not answer')),
  dropBefore: () => Promise.reject(new Error('the store does not answer')),
};
