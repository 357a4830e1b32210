// The store as metrics see it: every operation that returns a promise is
// timed by name and outcome, and the store is up while its last operation
// (or the readiness ping a scrape makes) succeeded; and whether its Redis
// evicts keys (`gatehouse_store_evicting`). A wrapper, so neither
// store implementation carries metrics code; the hot path's cached bearer
// checks never reach the store and pay nothing.
import { Gauge } from 'prom-client';
import type { Store } from '../store/store.js';
import type { Metrics } from './metrics.js';

/** How long a scrape waits for the store's ping before calling it down. */
const SCRAPE_PING_TIMEOUT_MS = 1_000;

export function measuredStore(store: Store, metrics: Metrics): Store {
  const wrapped = new Map<PropertyKey, unknown>();
  const measured = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || property === 'constructor') return value;
      let wrapper = wrapped.get(property);
      if (wrapper === undefined) {
        const operation = String(property);
        const fn = value as (...args: unknown[]) => unknown;
        const succeeded = metrics.storeCommandDuration.labels(operation, 'ok');
        const failed = metrics.storeCommandDuration.labels(operation, 'error');
        wrapper = (...args: unknown[]) => {
          const started = performance.now();
          const result = fn.apply(target, args);
          if (!(result instanceof Promise)) return result;
          return result.then(
            (ok: unknown) => {
              succeeded.observe((performance.now() - started) / 1000);
              return ok;
            },
            (error: unknown) => {
              failed.observe((performance.now() - started) / 1000);
              throw error;
            },
          );
        };
        wrapped.set(property, wrapper);
      }
      return wrapper;
    },
  });
  metrics.readFrom({
    storeUp: async () => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('store ping timed out')), SCRAPE_PING_TIMEOUT_MS);
      });
      try {
        await Promise.race([measured.ping(), timeout]);
        return true;
      } catch {
        return false;
      } finally {
        clearTimeout(timer);
      }
    },
  });
  new Gauge({
    name: 'gatehouse_store_evicting',
    help: "1 for a maxmemory-policy of the store's Redis masters that deletes keys when memory is full (any but noeviction), 0 for noeviction.",
    labelNames: ['policy'] as const,
    registers: [metrics.registry],
    aggregator: 'max',
    collect() {
      this.reset();
      for (const { policy, evicts } of store.evictionPolicies?.() ?? []) if (policy !== undefined) this.set({ policy }, evicts ? 1 : 0);
    },
  });
  return measured;
}
