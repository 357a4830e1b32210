// The quotas' metrics: by route, limit and tier (names the config gives, so the
// label sets are bounded), never by consumer.
import { Counter, type LabelValues } from 'prom-client';
import type { Metrics } from '../../observability/metrics.js';

export class QuotaMetrics {
  /** Requests a limit counted, refused or let through uncounted (an unlimited tier). */
  readonly decisions: Counter<'route' | 'limit' | 'tier' | 'outcome'>;
  /** Requests a limit could not count because the store did not answer, by what was done: let through (open) or refused (closed). */
  readonly storeFailures: Counter<'route' | 'limit' | 'outcome'>;
  /** The decisions' children by their labels, so the hot path hashes no label object (bounded as the labels are). */
  readonly #children = new Map<string, { inc(): void }>();

  constructor(metrics: Metrics) {
    this.decisions = new Counter({
      name: 'gatehouse_quota_decisions_total',
      help: 'Requests weighed by a route quota, by route, limit, tier and outcome (taken, refused, unlimited).',
      labelNames: ['route', 'limit', 'tier', 'outcome'] as const,
      registers: [metrics.registry],
    });
    this.storeFailures = new Counter({
      name: 'gatehouse_quota_store_failures_total',
      help: 'Requests a route quota could not count with the store unreachable, by route, limit and outcome (open: let through, closed: refused).',
      labelNames: ['route', 'limit', 'outcome'] as const,
      registers: [metrics.registry],
    });
  }

  /** Counts one decision of a limit. */
  decided(route: string, limit: string, tier: string, outcome: 'taken' | 'refused' | 'unlimited'): void {
    const key = `${route}\u0000${limit}\u0000${tier}\u0000${outcome}`;
    let child = this.#children.get(key);
    if (child === undefined) {
      const labels: LabelValues<'route' | 'limit' | 'tier' | 'outcome'> = { route, limit, tier, outcome };
      child = this.decisions.labels(labels);
      this.#children.set(key, child);
    }
    child.inc();
  }
}
