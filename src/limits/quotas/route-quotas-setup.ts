// The route quotas of a gateway, on its store's counters: shared in Redis, or
// this process's own on the memory store, which is said at start (N instances
// on a memory store each allow the whole of every limit).
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Metrics } from '../../observability/metrics.js';
import { quotaCountersOf } from '../../store/quota-counters.js';
import type { LimitsStore } from '../../store/store.js';
import { RouteQuotas } from './route-quotas.js';

export function routeQuotasFor(config: Config, store: LimitsStore, metrics: Metrics, logger: Logger): RouteQuotas {
  const quotas = new RouteQuotas({ counters: quotaCountersOf(store), metrics });
  if (!quotas.shared && config.routes.some((route) => route.quotas !== undefined)) {
    logger.warn('route quotas count in this instance only (memory store): each instance allows the whole of every limit; use a Redis store to count together');
  }
  return quotas;
}
