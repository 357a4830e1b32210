// Opens the deployment's audit trail: the store's stream when it has one (Redis), else the local file
// (`audit.file`); the appender over it, with the spool and checkpoints a gateway keeps, and its retention timer.
import type { Logger } from 'pino';
import type { AuditConfig } from '../config/schema.js';
import type { AuditTrailRecords } from '../store/audit-records.js';
import type { AuditStore } from '../store/store.js';
import { AuditAppender } from './appender.js';
import type { CheckpointSigner } from './checkpoint.js';
import type { AuditEntry } from './entry.js';
import { FileAuditTrail } from './file-trail.js';
import { applyRetention } from './retention.js';
import { AuditSpool } from './spool.js';

export interface AuditTrail {
  readonly records: AuditTrailRecords;
  /** The recorder every emission point is handed. */
  readonly appender: AuditAppender;
  close(): Promise<void>;
}

export interface OpenAuditTrailOptions {
  config: AuditConfig;
  store: AuditStore;
  logger: Logger;
  /** A gateway's: signs checkpoints, spools during outages, applies retention. Absent: a command's. */
  gateway?: { sign?: CheckpointSigner | undefined };
  /** Told every entry appended: the OTLP log export when tracing export is on. */
  exported?: ((entry: AuditEntry) => void) | undefined;
}

/** The trail's records where this deployment keeps them. */
export function auditRecordsOf(config: AuditConfig, store: AuditStore): AuditTrailRecords {
  return store.auditTrail ?? new FileAuditTrail(config.file);
}

export async function openAuditTrail(options: OpenAuditTrailOptions): Promise<AuditTrail> {
  const { config, logger, gateway } = options;
  const log = logger.child({ component: 'audit' });
  const records = auditRecordsOf(config, options.store);
  const appender = new AuditAppender({
    records,
    logger: log,
    spool: new AuditSpool(gateway ? config.spoolFile : undefined),
    ...(gateway?.sign && { checkpoints: { every: config.checkpointEvery, sign: gateway.sign } }),
    ...(options.exported && { exported: options.exported }),
  });
  await appender.start();
  const { maxAgeDays, maxEntries, checkS } = config.retention;
  const cutting = gateway && (maxAgeDays !== undefined || maxEntries !== undefined);
  const timer = cutting
    ? setInterval(() => {
        applyRetention(records, appender, { maxAgeDays, maxEntries }).catch((error: unknown) =>
          log.warn({ err: error }, 'the audit retention could not be applied now'),
        );
      }, checkS * 1000).unref()
    : undefined;
  return {
    records,
    appender,
    async close() {
      clearInterval(timer);
      await appender.settled();
      await appender.close();
    },
  };
}
