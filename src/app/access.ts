// Stage: what a request meets before any handler weighs it: the client's
// address, read once for limits, throttling, logs and the X-Forwarded-For sent
// upstream; the defences against floods of unauthenticated work, made together
// from `limits` because they know of each other: the memory of refused work
// per address (limits/abuse-guard.ts) orders the hashing queue's lanes
// (limits/fair-work-queue.ts), and each login the full queue turns away is a
// strike; load shedding on event-loop delay (limits/load-shedder.ts) is the
// third; and the routes' rate limits. The front door (server/front-door.ts)
// answers the flood refusals from the request head, admission the rest.
import type { Config } from '../config/schema.js';
import { compileClientAddress, type ClientAddress } from '../http/client-address.js';
import { AbuseGuard } from '../limits/abuse-guard.js';
import { FairWorkQueue } from '../limits/fair-work-queue.js';
import type { LimiterFactory } from '../limits/limiters.js';
import { LoadShedder } from '../limits/load-shedder.js';
import { RouteLimits } from '../limits/route-limits.js';
import type { RouteQuotas } from '../limits/quotas/route-quotas.js';
import { routeQuotasFor } from '../limits/quotas/route-quotas-setup.js';
import type { LimitsStore } from '../store/store.js';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.js';

export interface AccessStage {
  clientAddress: ClientAddress;
  /** Addresses that keep sending refused work: their logins wait behind clean addresses'. */
  abuse: AbuseGuard;
  /** Where every login's password hashing waits for its turn. */
  passwordHashing: FairWorkQueue;
  load: LoadShedder;
  routeLimits: RouteLimits;
  /** The routes' quotas per consumer, counted together through a Redis store (limits/quotas/). */
  quotas: RouteQuotas;
  close(): void;
}

export function openAccess(config: Config, metrics: Metrics, state: { limiters: LimiterFactory; store: LimitsStore }, logger: Logger): AccessStage {
  const { limits } = config;
  const abuse = new AbuseGuard(limits.abuse);
  // Addresses that keep sending refused work wait behind clean addresses; those with a recent success go first.
  const passwordHashing = new FairWorkQueue(limits.passwordHashing, (address) => abuse.laneOf(address));
  passwordHashing.on('refused', (address) => {
    metrics.throttled.inc({ limit: 'password_hashing' });
    abuse.strike(address);
  });
  const load = new LoadShedder(limits.loadShedding);
  return {
    clientAddress: compileClientAddress(config.server.trustedProxies),
    abuse,
    passwordHashing,
    load,
    routeLimits: new RouteLimits(state.limiters, metrics),
    quotas: routeQuotasFor(config, state.store, metrics, logger),
    close() {
      abuse.close();
      load.close();
    },
  };
}
