// The admin listener's health endpoints. Liveness says the process serves;
// readiness says it can do its job, which needs the store and a gateway that
// is not stopping.
import type { FastifyInstance } from 'fastify';
import type { Drain } from '../http/drain.js';
import { sendError } from '../http/error-handler.js';
import { gatehouseError } from '../http/errors.js';
import type { Store } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';

export async function healthRoutes(app: FastifyInstance, options: { store: Store; drain: Drain }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    if (options.drain.active) return sendError(reply, gatehouseError('shutting_down'));
    try {
      await options.store.ping();
      return { status: 'ready', store: options.store.kind };
    } catch (error) {
      request.log.warn({ err: error }, 'not ready: the store does not answer');
      return sendError(reply, storeUnavailable(error));
    }
  });
}
