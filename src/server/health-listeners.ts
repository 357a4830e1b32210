// Where `/healthz` and `/readyz` answer (`server.health.on`), so that a load
// balancer on another host needs neither the internal status API nor
// `/metrics`: the admin listener always (admin-listener.ts); with `public`,
// the public listener too (public-listener.ts hands it the two paths, never
// shed, and no route may claim them); with `own`, a listener that serves
// health and nothing else. Every listener answers from the same checks.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { LoadShedder } from '../limits/load-shedder.js';
import type { PeerAgreement } from '../observability/peer-agreement.js';
import { healthRoutes, type HealthOptions } from './health.js';
import { operatorListener } from './operator-listener.js';
import { readinessChecks, usersLossCheck, type ReadinessParts } from './readiness-checks.js';
import type { ReadinessCheck } from './readiness.js';

/** What the health endpoints read of the gateway. */
export interface GatewayHealthParts extends Omit<ReadinessParts, 'listening' | 'agreement' | 'load'> {
  /** The public listener: unready while it does not accept connections. */
  publicApp: FastifyInstance;
  agreement?: PeerAgreement | undefined;
  load?: LoadShedder | undefined;
  /** With the users held in the store: whether they were lost (users/store-users.ts). */
  usersLoss?: (() => { missing: string[] } | undefined) | undefined;
}

/** The health endpoints' options from the gateway's parts; `more` adds checks of other parts (one entry each in `checks`). */
export function healthOptions(parts: GatewayHealthParts, more: readonly ReadinessCheck[] = []): HealthOptions {
  const { publicApp, agreement, load, usersLoss } = parts;
  const readings = {
    agreement: agreement && (() => agreement.state()),
    load: load && (() => load.state),
  };
  return {
    checks: [
      ...readinessChecks({ ...parts, ...readings, listening: () => publicApp.server.listening }),
      ...(usersLoss ? [usersLossCheck(usersLoss)] : []),
      ...more,
    ],
    storeKind: parts.store.kind,
    ...readings,
  };
}

/**
 * Puts health where `server.health.on` says besides the admin listener: on
 * `publicApp` (before it listens), or on a listener of its own, returned to
 * be listened on (`server.health.host`, `server.health.port`) and closed.
 */
export async function placeHealth(config: Config, logger: Logger, publicApp: FastifyInstance, health: HealthOptions): Promise<FastifyInstance | undefined> {
  const { on } = config.server.health;
  if (on === 'public') await publicApp.register(healthRoutes, health);
  if (on !== 'own') return undefined;
  const app = await operatorListener(config, logger, 'health');
  await app.register(healthRoutes, health);
  return app;
}
