// Stage: where state lives: the store (in memory, or Redis from `store.url`;
// store/create-store.ts), measured for the metrics, and the rate-limiter
// counters kept in it. A store handed in (tests run two gateways on one) is
// the caller's to close.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { LimiterFactory } from '../limits/limiters.js';
import type { Metrics } from '../observability/metrics.js';
import { measuredStore } from '../observability/store-metrics.js';
import { createStore } from '../store/create-store.js';
import type { Store } from '../store/store.js';

export interface StateStage {
  store: Store;
  limiters: LimiterFactory;
  close(): Promise<void>;
}

export async function openState(config: Config, logger: Logger, metrics: Metrics, shared?: Store): Promise<StateStage> {
  const store = measuredStore(shared ?? (await createStore(config.store, logger, config.limits)), metrics);
  return {
    store,
    limiters: new LimiterFactory(store),
    async close() {
      if (!shared) await store.close();
    },
  };
}
