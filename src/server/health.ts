// The admin listener's health endpoints. Liveness says the process serves;
// readiness says it can do its job, which needs the store, a gateway that
// is not stopping and, fronting an OpenID Provider, the provider's keys.
// Both say when load is shed (limits/load-shedder.ts): `degraded`, with the
// loop's delay, and still 200. Liveness failing would restart a process that
// is only busy; readiness failing would move its whole load onto the other
// instances at the moment they are likely loaded too, and with every one out
// of rotation nothing is served at all. The shed requests themselves carry
// 503 and Retry-After, and the admin listener is not shed.
import type { FastifyInstance } from 'fastify';
import type { Drain } from '../http/drain.js';
import { LIVENESS_PATH, READINESS_PATH } from '../http/gateway-paths.js';
import { sendError } from '../http/error-handler.js';
import { gatehouseError } from '../core/errors.js';
import type { LoadState } from '../limits/load-shedder.js';
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
  /** Load shedding's state now: reported by both endpoints. */
  load?: () => LoadState;
  /**
   * The users held in the store were lost (identity/store-users.ts): shown as
   * `users`, degraded and still 200 (every instance shares the loss; taking
   * them all out of rotation would not bring the users back).
   */
  usersLoss?: () => { missing: string[] } | undefined;
}

export async function healthRoutes(app: FastifyInstance, options: HealthOptions): Promise<void> {
  const load = () => {
    const state = options.load?.();
    return state && { load: { shedding: state.shedding, eventLoopDelayMs: Math.round(state.delayMs), eventLoopUtilization: round2(state.utilization) } };
  };
  const shedding = () => options.load !== undefined && options.load().shedding !== 'none';
  app.get(LIVENESS_PATH, async () => ({ status: shedding() ? 'degraded' : 'ok', ...load() }));
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
    const usersLoss = options.usersLoss?.();
    return {
      status: shedding() || usersLoss ? 'degraded' : 'ready',
      store: options.store.kind,
      ...load(),
      ...(options.agreement && { peers: options.agreement() }),
      ...(usersLoss && { users: { lost: true, missing: usersLoss.missing, restore: 'gatehouse users import FILE (an export)' } }),
    };
  });
}

const round2 = (value: number) => Math.round(value * 100) / 100;
