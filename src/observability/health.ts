// The admin listener's health endpoints. Liveness says the process serves;
// readiness says it can do its job, which needs the store.
import type { FastifyInstance } from 'fastify';
import { sendError } from '../http/error-handler.js';
import type { Store } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';

export async function healthRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    try {
      await options.store.ping();
      return { status: 'ready', store: options.store.kind };
    } catch (error) {
      request.log.warn({ err: error }, 'not ready: the store does not answer');
      return sendError(reply, storeUnavailable(error));
    }
  });
}
