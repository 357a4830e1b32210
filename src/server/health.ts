// The admin listener's health endpoints. Liveness says the process serves;
// readiness says it can do its job, which needs the store, a gateway that
// is not stopping and, fronting an OpenID Provider, the provider's keys.
import type { FastifyInstance } from 'fastify';
import type { Drain } from '../http/drain.js';
import { LIVENESS_PATH, READINESS_PATH } from '../http/gateway-paths.js';
import { sendError } from '../http/error-handler.js';
import { gatehouseError } from '../core/errors.js';
import type { Store } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';

export interface HealthOptions {
  store: Store;
  drain: Drain;
  /** Fronting an OpenID Provider: resolves once its keys are held, so tokens can be checked. */
  identityReady?: () => Promise<void>;
  /**
   * Instances sharing the store that disagree with this one (observability/peer-agreement.ts).
   * Shown, not failed on: taking every pod out of rotation would not make them agree.
   */
  agreement?: () => { peers: number; keysDiffer: string[]; usersDiffer: string[] };
}

export async function healthRoutes(app: FastifyInstance, options: HealthOptions): Promise<void> {
  app.get(LIVENESS_PATH, async () => ({ status: 'ok' }));
  app.get(READINESS_PATH, async (request, reply) => {
    if (options.drain.active) return sendError(reply, gatehouseError('shutting_down'));
    try {
      await options.store.ping();
    } catch (error) {
      request.log.warn({ err: error }, 'not ready: the store does not answer');
      return sendError(reply, storeUnavailable(error));
    }
    try {
      await options.identityReady?.();
    } catch (error) {
      request.log.warn({ err: error }, 'not ready: the OpenID Provider keys are not held yet');
      return sendError(reply, gatehouseError('identity_provider_not_ready', { cause: error }));
    }
    return { status: 'ready', store: options.store.kind, ...(options.agreement && { peers: options.agreement() }) };
  });
}
