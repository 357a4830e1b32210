// GET /metrics on the admin listener: the gateway's Prometheus registry in
// the text exposition format (with workers, the sum over all of them: see
// cluster-metrics.ts). Admin only: counters say how traffic flows, which is
// nobody's business on the public side.
import type { FastifyInstance } from 'fastify';
import { METRICS_PATH } from '../http/gateway-paths.js';
import type { Metrics } from '../observability/metrics.js';

export interface MetricsRouteOptions {
  metrics: Metrics;
  /** How a scrape is answered when this process is not the only one counting (a cluster worker). */
  scrape?: () => Promise<string>;
}

export async function metricsRoute(app: FastifyInstance, options: MetricsRouteOptions): Promise<void> {
  const { registry } = options.metrics;
  const scrape = options.scrape ?? (() => registry.metrics());
  app.get(METRICS_PATH, async (_request, reply) => reply.type(registry.contentType).send(await scrape()));
}
