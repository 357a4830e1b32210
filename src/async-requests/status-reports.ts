// Status reports a backend was told are `applied` (or `already_applied`)
// while the store could not yet confirm them as durable: the master made the
// transition, but no replica acknowledged it in time, so a failover could
// still undo it. Such a report is kept as a 202's record is (journal first,
// then the outbox) and written again until the store confirms it.
//
// Written again, a report is the same transition: the store's state machine
// decides (pending → terminal only), so a repeat is a no-op, and a record
// that ended the other way meanwhile (through the new master) keeps its first
// outcome: logged, since the backend was told otherwise, and never retried.
import type { Logger } from 'pino';
import type { RequestRecordStore } from '../store/store.js';
import type { StatusReport } from './journal-lines.js';

/**
 * Writes one kept report to the store. Resolves once the store confirms it
 * (or answered that it never can be applied); rejects when the store is
 * unavailable or cannot confirm it yet, so that it is tried again.
 */
export async function writeStatusReport(store: RequestRecordStore, report: StatusReport, retentionMs: number, logger: Logger): Promise<void> {
  const outcome = await store.transitionRequest(report.id, report.status, retentionMs, report.reportedAt);
  const fields = { event: 'status_report_replayed', requestId: report.id, status: report.status, outcome };
  switch (outcome) {
    case 'applied':
      logger.info(fields, 'an acknowledged status report the store had not confirmed is applied');
      return;
    case 'already_applied':
      logger.debug(fields, 'an acknowledged status report was in the store already');
      return;
    case 'conflict':
      logger.error(fields, 'an acknowledged status report found the request ended the other way meanwhile: its first outcome stays');
      return;
    case 'not_found':
      logger.error(fields, 'an acknowledged status report found no record (expired, or lost with a master): it cannot be applied');
      return;
  }
}
