// The admin listener: health, readiness, metrics and the internal status API
// that backends report outcomes to. Never public: its own host and port
// (loopback by default) and its own connection cap. It answers health in
// every case; `server.health.on` may put health on another listener too
// (server/health-listeners.ts), never the rest of what is here.
import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { workerScrape } from '../observability/cluster-metrics.js';
import type { Metrics } from '../observability/metrics.js';
import { internalRoutes } from '../async-requests/internal-routes.js';
import type { RequestTracker } from '../async-requests/request-tracker.js';
import { healthRoutes, type HealthOptions } from './health.js';
import { metricsRoute } from './metrics-route.js';
import { operatorListener } from './operator-listener.js';
import { auditListRoute } from '../audit/list-route.js';
import type { AuditTrailRecords } from '../store/audit-records.js';

export interface AdminParts {
  metrics: Metrics;
  requests: RequestTracker;
  /** The health endpoints' checks and readings (server/health-listeners.ts). */
  health: HealthOptions;
  /** The audit trail, listed for tools (audit/list-route.ts). */
  audit?: AuditTrailRecords;
}

/** The admin listener with its routes, or undefined when `admin.enabled` is off. */
export async function adminListener(config: Config, logger: Logger, parts: AdminParts): Promise<FastifyInstance | undefined> {
  if (!config.admin.enabled) return undefined;
  const app = await operatorListener(config, logger, 'admin');
  await app.register(healthRoutes, parts.health);
  // A cluster worker's scrape answers with the sum over every worker.
  await app.register(metricsRoute, { metrics: parts.metrics, ...(cluster.isWorker && { scrape: workerScrape(parts.metrics.registry) }) });
  await app.register(internalRoutes, {
    tracker: parts.requests,
    serviceToken: config.requests.serviceToken,
    serviceTokenPrevious: config.requests.serviceTokenPrevious,
    bodyLimitBytes: config.server.apiBodyLimitBytes,
    logger,
  });
  if (parts.audit) await app.register(auditListRoute(parts.audit));
  return app;
}
