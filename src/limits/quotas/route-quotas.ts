// A route's quotas on the hot path: every limit of the route weighs the
// request at once (one store round trip for all of them, each its own atomic
// count); the request passes when every limit takes it, and a limit that took
// it while another refused gives its count back. The answer's RateLimit fields
// say where each counted limit stands; a refusal is a 429 naming the limit,
// with Retry-After. Only a route with quotas comes here.
//
// A limit whose store does not answer fails open (the request passes,
// uncounted by it) or closed (503), as the limit says; both are counted.
// Why: docs/decisions/0026-quotas-per-consumer.md
import type { RouteConfig } from '../../config/schema.js';
import { gatehouseError, isGatehouseError, type GatehouseError } from '../../core/errors.js';
import type { Principal } from '../../core/principal.js';
import type { Metrics } from '../../observability/metrics.js';
import type { CompiledRoute } from '../../routing/route-table.js';
import type { QuotaCounters } from '../../store/quota-counters.js';
import { storeUnavailable } from '../../store/store-unavailable.js';
import { consumerOf, tierOf, type Tier } from './consumers.js';
import { QuotaMetrics } from './quota-metrics.js';
import { QuotaLimit, type Weighing } from './quota-limit.js';
import { readUsage, type LimitUsage } from './quota-usage.js';
import { rateLimitFields, type LimitState, type RateLimitFields } from './ratelimit-headers.js';

/** One limit's verdict on one request. */
interface Verdict {
  readonly limit: QuotaLimit;
  readonly tier: Tier;
  /** Absent: not counted (an unlimited tier, or a store that failed open). */
  readonly counted?: { consumer: string; weighing: Weighing; taken: boolean; value: number };
  /** The store failed and the limit fails closed. */
  readonly failure?: GatehouseError;
}

export interface RouteQuotasOptions {
  counters: QuotaCounters;
  metrics?: Metrics;
  now?: () => number;
}

export class RouteQuotas {
  readonly #counters: QuotaCounters;
  readonly #metrics: QuotaMetrics | undefined;
  readonly #now: () => number;
  /** One set of limits per route config: a reload's new config gets its own (its counters, named alike, stay). */
  readonly #limits = new WeakMap<RouteConfig, readonly QuotaLimit[]>();

  constructor(options: RouteQuotasOptions) {
    this.#counters = options.counters;
    this.#metrics = options.metrics && new QuotaMetrics(options.metrics);
    this.#now = options.now ?? Date.now;
  }

  /** True when every instance counts together (a Redis store). */
  get shared(): boolean {
    return this.#counters.shared;
  }

  /** The route's limits, compiled once per route config. */
  limitsOf(route: CompiledRoute): readonly QuotaLimit[] {
    let limits = this.#limits.get(route.config);
    if (limits === undefined) {
      limits = (route.config.quotas ?? []).map((quota) => new QuotaLimit(route.name, quota));
      this.#limits.set(route.config, limits);
    }
    return limits;
  }

  /** Where `principal` stands in every limit of `routes` that counts it (not those by address): for the account API. */
  usageOf(routes: readonly CompiledRoute[], principal: Principal): Promise<LimitUsage[]> {
    const queries = routes
      .filter((route) => route.config.auth === 'required')
      .flatMap((route) => this.limitsOf(route))
      .filter((limit) => limit.config.by !== 'address')
      .map((limit) => ({ limit, consumer: consumerOf(limit.config.by, principal, ''), tier: tierOf(limit.config, principal) }));
    return readUsage(this.#counters, queries, this.#now());
  }

  /**
   * Counts one request of the caller against every limit of the route. Resolves
   * with the RateLimit fields to answer with; rejects with `quota_exceeded`
   * (429) or, for a limit that fails closed, `store_unavailable` (503).
   */
  async take(route: CompiledRoute, principal: Principal | null, address: string): Promise<RateLimitFields | undefined> {
    const nowMs = this.#now();
    const verdicts = await Promise.all(this.limitsOf(route).map((limit) => this.#weigh(limit, principal, address, nowMs)));
    const failure = verdicts.find((verdict) => verdict.failure !== undefined)?.failure;
    let refused: { verdict: Verdict; retryAfterS: number } | undefined;
    for (const verdict of verdicts) {
      const counted = verdict.counted;
      if (counted === undefined || counted.taken) continue;
      const retryAfterS = verdict.limit.retryAfterS(counted.weighing, counted.value, nowMs);
      if (refused === undefined || retryAfterS > refused.retryAfterS) refused = { verdict, retryAfterS };
    }
    const passes = failure === undefined && refused === undefined;
    const fields = rateLimitFields(this.#states(verdicts, nowMs, !passes));
    if (passes) return fields;
    await this.#giveBack(verdicts);
    if (refused === undefined) throw failure!;
    const { limit, tier } = refused.verdict;
    throw gatehouseError('quota_exceeded', {
      reason: `limit ${limit.name} of route ${limit.route} reached (tier ${tier.name})`,
      headers: {
        'retry-after': String(refused.retryAfterS),
        ...(fields !== undefined && { 'ratelimit-policy': fields.policy, ratelimit: fields.state }),
      },
    });
  }

  async #weigh(limit: QuotaLimit, principal: Principal | null, address: string, nowMs: number): Promise<Verdict> {
    const tier = tierOf(limit.config, principal);
    if (tier.size === 'unlimited') {
      this.#metrics?.decided(limit.route, limit.name, tier.name, 'unlimited');
      return { limit, tier };
    }
    const consumer = consumerOf(limit.config.by, principal, address);
    const weighing = limit.weighing(tier.size, nowMs);
    try {
      const count = await this.#counters.take(consumer, weighing.counter, weighing.counting, nowMs);
      this.#metrics?.decided(limit.route, limit.name, tier.name, count.taken ? 'taken' : 'refused');
      return { limit, tier, counted: { consumer, weighing, taken: count.taken, value: count.value } };
    } catch (error) {
      const open = limit.config.whenStoreDown === 'open';
      this.#metrics?.storeFailures.inc({ route: limit.route, limit: limit.name, outcome: open ? 'open' : 'closed' });
      if (open) return { limit, tier };
      return { limit, tier, failure: isGatehouseError(error) ? error : storeUnavailable(error) };
    }
  }

  /** Where each counted limit stands; `givenBack`: the request is refused, so what it took is not counted. */
  #states(verdicts: readonly Verdict[], nowMs: number, givenBack: boolean): LimitState[] {
    const states: LimitState[] = [];
    for (const { limit, tier, counted } of verdicts) {
      if (counted === undefined) continue;
      const { weighing } = counted;
      const took = givenBack && counted.taken ? (weighing.counting.kind === 'calendar' ? 1 : weighing.counting.intervalMs) : 0;
      states.push(limit.state(weighing, tier.size as number, counted.value - took, nowMs));
    }
    return states;
  }

  /** The counts a refused request made are taken back: it did not go through. A store that fails here leaves them (the caller loses one request). */
  async #giveBack(verdicts: readonly Verdict[]): Promise<void> {
    const taken = verdicts.filter((verdict) => verdict.counted?.taken === true);
    await Promise.all(
      taken.map(({ counted }) => this.#counters.giveBack(counted!.consumer, counted!.weighing.counter, counted!.weighing.counting).catch(() => undefined)),
    );
  }
}
