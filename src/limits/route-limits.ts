// Per-route request limits (`routes[].rateLimit`): `points` requests per
// `durationS`, counted per client address on a public route and per subject
// on an authenticated one, on the configured store so that every instance
// counts together. Only a route with a limit comes here: the others cost
// nothing on the proxy's hot path.
//
// With Redis each counted request is one round trip. A client over its limit
// is remembered in memory until its window ends (rate-limiter-flexible's
// in-memory block), so a flood is refused without asking Redis again; an
// insurance limiter was not chosen: it would count per instance while Redis
// is down, i.e. let N times the limit through, where a 503 is more honest.
import type { RateLimitConfig, RouteConfig } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { CompiledRoute } from '../routing/route-table.js';
import { limiterCall, tooManyRequests, type Limiter, type LimiterFactory } from './limiters.js';

export class RouteLimits {
  readonly #factory: LimiterFactory;
  readonly #metrics: Metrics | undefined;
  /** One limiter per route config: a reload's new config gets its own, the old one goes with it. */
  readonly #limiters = new WeakMap<RouteConfig, Limiter>();

  constructor(factory: LimiterFactory, metrics?: Metrics) {
    this.#factory = factory;
    this.#metrics = metrics;
  }

  /** Counts one request of `who` on the route; rejects with a 429 and its Retry-After over the limit. */
  async take(route: CompiledRoute, limit: RateLimitConfig, who: string): Promise<void> {
    const res = await limiterCall(() => this.#limiter(route, limit).consume(who));
    if (res.consumedPoints > limit.points) {
      this.#metrics?.rateLimited.inc({ route: route.name });
      this.#metrics?.throttled.inc({ limit: 'route' });
      throw tooManyRequests(res.msBeforeNext, 'request limit of this route reached');
    }
  }

  #limiter(route: CompiledRoute, limit: RateLimitConfig): Limiter {
    let limiter = this.#limiters.get(route.config);
    if (limiter === undefined) {
      limiter = this.#factory.create({ name: `route:${route.name}`, points: limit.points, durationS: limit.durationS, inMemoryBlock: true });
      this.#limiters.set(route.config, limiter);
    }
    return limiter;
  }
}
