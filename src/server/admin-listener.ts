// The admin listener: health, readiness, metrics and the internal status API
// that backends report outcomes to. Never public: its own host and port
// (loopback by default) and its own connection cap.
import cluster from 'node:cluster';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Drain } from '../http/drain.js';
import { answerFrameworkError, errorHandler } from '../http/error-handler.js';
import { limitConnections } from '../limits/connection-limits.js';
import type { LoadState } from '../limits/load-shedder.js';
import { workerScrape } from '../observability/cluster-metrics.js';
import type { Metrics } from '../observability/metrics.js';
import { internalRoutes } from '../requests/internal-routes.js';
import type { RequestTracker } from '../requests/request-tracker.js';
import type { Store } from '../store/store.js';
import { answerUnparsableRequest, arrivalTimeouts } from './arrival.js';
import { healthRoutes } from './health.js';
import { metricsRoute } from './metrics-route.js';
import { recordRoutes } from './route-record.js';

export interface AdminParts {
  store: Store;
  drain: Drain;
  metrics: Metrics;
  requests: RequestTracker;
  /** Readiness of what the identity mode depends on beyond the store (a provider's keys); absent: nothing. */
  identityReady?: (() => Promise<void>) | undefined;
  /** With keys shared through the store: who disagrees with this instance (readiness shows it). */
  agreement?: (() => { peers: number; keysDiffer: string[]; usersDiffer: string[] }) | undefined;
  /** Load shedding's state now (limits/load-shedder.ts): health and readiness report it. */
  load?: (() => LoadState) | undefined;
}

/** The admin listener with its routes, or undefined when `admin.enabled` is off. */
export async function adminListener(config: Config, logger: Logger, parts: AdminParts): Promise<FastifyInstance | undefined> {
  if (!config.admin.enabled) return undefined;
  const adminLogger = logger.child({ listener: 'admin' });
  const { headersTimeoutMs, requestTimeoutMs } = config.server;
  const app = Fastify({
    loggerInstance: adminLogger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors: answerFrameworkError,
    http: arrivalTimeouts(headersTimeoutMs, requestTimeoutMs),
    requestTimeout: requestTimeoutMs,
    clientErrorHandler: answerUnparsableRequest,
  });
  // Its own cap, far below the public one's: a flood of the public listener never reaches it.
  limitConnections(app.server, { maxConnections: config.admin.maxConnections }, adminLogger);
  recordRoutes(app);
  await app.register(errorHandler);
  await app.register(healthRoutes, {
    store: parts.store,
    drain: parts.drain,
    ...(parts.identityReady && { identityReady: parts.identityReady }),
    ...(parts.agreement && { agreement: parts.agreement }),
    ...(parts.load && { load: parts.load }),
  });
  // A cluster worker's scrape answers with the sum over every worker.
  await app.register(metricsRoute, { metrics: parts.metrics, ...(cluster.isWorker && { scrape: workerScrape(parts.metrics.registry) }) });
  await app.register(internalRoutes, {
    tracker: parts.requests,
    serviceToken: config.requests.serviceToken,
    serviceTokenPrevious: config.requests.serviceTokenPrevious,
    bodyLimitBytes: config.server.apiBodyLimitBytes,
    logger,
  });
  return app;
}
