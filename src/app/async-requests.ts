// Stage: asynchronous requests (spec 4.3, 4.4): the request tracker as the
// configuration makes it (records kept for their retention, an outbox for a
// store that is down, and with Redis a local journal so that nothing accepted
// is lost in an outage), the capture of a route's 202 answers, and the
// reconciler that asks upstreams for the outcome of records left pending.
import type { Logger } from 'pino';
import { AsyncCapture } from '../async-requests/async-capture.js';
import { Journal } from '../async-requests/journal.js';
import { RequestTracker } from '../async-requests/request-tracker.js';
import { reconcileSettings, UpstreamReconciler } from '../async-requests/upstream-reconciler.js';
import { DEFAULT_STATUS_POLL_INTERVAL_MS, DEFAULT_STATUS_TIMEOUT_MS } from '../config/defaults.js';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestRecordStore, StoreLifecycle } from '../store/store.js';
import type { LiveParts } from './live-parts.js';

export interface AsyncRequestsStage {
  /** Request records of asynchronous operations, with their outbox. */
  requests: RequestTracker;
  capture: AsyncCapture;
  reconciler: UpstreamReconciler;
  /** Answers the long polls now instead of holding the listeners open (the drain's start). */
  endWatches(): void;
  /** After the reconciler stops, the outbox gets its last chance to be written: before the store closes. */
  close(): Promise<void>;
}

export async function openAsyncRequests(
  config: Config,
  store: RequestRecordStore & Pick<StoreLifecycle, 'kind'>,
  metrics: Metrics,
  logger: Logger,
  live: LiveParts,
): Promise<AsyncRequestsStage> {
  const requests = await openRequestTracker(config, store, metrics, logger);
  const capture = new AsyncCapture({ tracker: requests, metrics, logger, retryAfterS: config.requests.retryAfterS });
  // A record names its route; the route's settings as they are now (reloads included) apply.
  const reconciler = new UpstreamReconciler({
    tracker: requests,
    logger,
    routeSettings: (name) => reconcileSettings(live.routes, name),
    defaults: { statusPollIntervalMs: DEFAULT_STATUS_POLL_INTERVAL_MS, statusTimeoutMs: DEFAULT_STATUS_TIMEOUT_MS },
  });
  return {
    requests,
    capture,
    reconciler,
    endWatches: () => requests.endWatches(),
    async close() {
      reconciler.close();
      await requests.close();
    },
  };
}

async function openRequestTracker(
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
