// The audit trail a command writes to: the store's stream when Redis is configured, else the local file; the
// entries it records are in the trail before the command ends, or it says they are not.
import { pino } from 'pino';
import { AuditAppender } from '../audit/appender.js';
import { auditRecordsOf } from '../audit/open-trail.js';
import { operatorActor, type AuditRecorder } from '../audit/recorder.js';
import { AuditSpool } from '../audit/spool.js';
import type { AuditActor } from '../audit/entry.js';
import type { AuditConfig } from '../config/schema.js';
import type { AuditStore } from '../store/store.js';
import type { StoreConfig } from '../config/schema.js';
import { writeLine, type OutputIo } from './command.js';
import { withStore } from './store-session.js';

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
    if (appender.waiting > 0) writeLine(io.stderr, `warning: ${appender.waiting} audit entries could not be written to the trail (the store does not answer)`);
    await appender.close();
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
  return withStore(store, 'the audit trail lives there', (opened) => withCommandAudit(io, audit, opened, use));
}
