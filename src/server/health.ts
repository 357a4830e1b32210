// The health endpoints, on whichever listener `server.health.on` names
// (server/health-listeners.ts). Liveness says the process serves; readiness
// says whether to send it traffic (server/readiness.ts folds the checks of
// server/readiness-checks.ts). Both say when load is shed
// (limits/load-shedder.ts): `degraded`, with the loop's delay, and still 200.
// Liveness failing would restart a process that is only busy; readiness
// failing would move its whole load onto the other instances at the moment
// they are likely loaded too. The shed requests themselves carry 503 and
// Retry-After, and health is never shed.
import type { FastifyInstance } from 'fastify';
import { gatehouseError } from '../core/errors.js';
import { LIVENESS_PATH, READINESS_PATH } from '../http/gateway-paths.js';
import type { LoadState } from '../limits/load-shedder.js';
import type { Store } from '../store/store.js';
import { evaluateReadiness, type ReadinessCheck } from './readiness.js';
import { loadDetail } from './readiness-checks.js';

export interface HealthOptions {
  checks: readonly ReadinessCheck[];
  storeKind: Store['kind'];
  /** Instances sharing the store that disagree with this one: also in `checks.peers`, kept at the top for older readers. */
  agreement?: (() => { peers: number; keysDiffer: string[]; usersDiffer: string[] }) | undefined;
  /** Load shedding's state now: reported by both endpoints. */
  load?: (() => LoadState) | undefined;
}

export async function healthRoutes(app: FastifyInstance, options: HealthOptions): Promise<void> {
  const load = () => {
    const state = options.load?.();
    return state && { load: loadDetail(state) };
  };
  const shedding = () => options.load !== undefined && options.load().shedding !== 'none';
  app.get(LIVENESS_PATH, async () => ({ status: shedding() ? 'degraded' : 'ok', ...load() }));
  app.get(READINESS_PATH, async (request, reply) => {
    // `store`, `load` and `peers` at the top: what the body held before `checks` (dashboards and scripts read them).
    const extra = { store: options.storeKind, ...load(), ...(options.agreement && { peers: options.agreement() }) };
    const answer = await evaluateReadiness(options.checks, extra, (name, cause) => {
      if (cause !== undefined) request.log.error({ err: cause, check: name }, 'readiness check failed');
      return gatehouseError('not_ready', { reason: `readiness check ${name} failed`, ...(cause !== undefined && { cause }) });
    });
    return reply.code(answer.httpStatus).headers(answer.headers).send(answer.body);
  });
}
