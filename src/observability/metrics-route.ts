// GET /metrics on the admin listener: the gateway's Prometheus registry in
// the text exposition format. Admin only: counters say how traffic flows,
// which is nobody's business on the public side.
import type { FastifyInstance } from 'fastify';
import type { Metrics } from './metrics.js';

export async function metricsRoute(app: FastifyInstance, options: { metrics: Metrics }): Promise<void> {
  const { registry } = options.metrics;
  app.get('/metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()));
}
