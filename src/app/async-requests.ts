// The request tracker as the configuration makes it: records kept for their
// retention, an outbox for a store that is down, and with Redis a local
// journal so that nothing accepted is lost in an outage.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestRecordStore, StoreLifecycle } from '../store/store.js';
import { Journal } from '../async-requests/journal.js';
import { RequestTracker } from '../async-requests/request-tracker.js';

export async function openRequestTracker(
  config: Config,
  store: RequestRecordStore & Pick<StoreLifecycle, 'kind'>,
  metrics: Metrics,
  logger: Logger,
): Promise<RequestTracker> {
  return new RequestTracker({
    store,
    metrics,
    logger,
    retentionMs: config.requests.retentionS * 1000,
    outboxMaxEntries: config.requests.outboxMaxEntries,
    unknownAfterOutageMs: config.requests.unknownAfterOutageS * 1000,
    // The in-memory store never refuses a record: nothing to journal, and the
    // embedded default writes no folder.
    ...(store.kind === 'redis' && {
      journal: await Journal.open(config.requests.journalDir, { logger, maxBytes: config.requests.journalMaxBytes }),
    }),
  });
}
