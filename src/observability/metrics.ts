// Prometheus metrics, served on the admin listener at /metrics. One registry
// per gateway (not prom-client's global one), so several gateways in one
// process (tests) do not share counters.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

export type CaptureOutcome =
  /** Recorded in the store. */
  | 'recorded'
  /** The store was down: queued in the outbox. */
  | 'queued'
  /** The store was down and the outbox full: not recorded. */
  | 'dropped'
  /** Passed through unrecorded: */
  | 'not_json'
  | 'too_large'
  | 'no_request_id'
  | 'no_subject'
  | 'duplicate';

export class Metrics {
  readonly registry = new Registry();

  readonly asyncCaptures = new Counter({
    name: 'gatehouse_async_captures_total',
    help: 'Upstream 202 answers seen by the proxy, by what became of them.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly outboxSize = new Gauge({
    name: 'gatehouse_outbox_records',
    help: 'Request records waiting in memory for the store to come back.',
    registers: [this.registry],
  });

  readonly outboxDropped = new Counter({
    name: 'gatehouse_outbox_dropped_total',
    help: 'Request records lost because the outbox was full while the store was down.',
    registers: [this.registry],
  });

  readonly statusTransitions = new Counter({
    name: 'gatehouse_request_transitions_total',
    help: 'Status transitions asked of the store, by source and outcome.',
    labelNames: ['source', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly loginEvents = new Counter({
    name: 'gatehouse_login_events_total',
    help: 'Logins and refreshes by method (password, api_key, refresh) and outcome (success, failure, throttled, lockout).',
    labelNames: ['method', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'gatehouse_rate_limited_total',
    help: 'Proxied requests refused by their route\'s request limit, by route.',
    labelNames: ['route'] as const,
    registers: [this.registry],
  });

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'gatehouse_' });
  }
}
