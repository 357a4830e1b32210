// Prometheus metrics, served on the admin listener at /metrics. One registry
// per gateway (not prom-client's global one), so several gateways in one
// process (tests) do not share counters.
//
// Label values are bounded: route names from the config (never raw paths),
// methods from a fixed list, reasons and kinds from the code. The per-request
// histograms are BoundHistograms (bound-histogram.ts): request-telemetry.ts
// binds each label combination once, and an observation is a bucket count.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { BoundHistogram } from './bound-histogram.js';

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

/**
 * Seconds. Fine steps below 10 ms resolve the gateway's own sub-millisecond
 * overhead (a cached bearer check and a forward on loopback); coarse ones
 * above follow slow upstreams up to the default response timeout.
 */
export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Store commands are fast or failing: microseconds to the reconnect bound. */
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5];

/** What a gauge reads when /metrics is scraped; unset ones read 0. */
export interface LiveReadings {
  openTunnels?: () => number;
  openLongPolls?: () => number;
  /** Connections the public listener's caps closed as they arrived, so far. */
  refusedConnections?: () => { total: number; perAddress: number };
  storeUp?: () => Promise<boolean>;
  /** The certificates in use now and when each stops being valid (epoch seconds). */
  certificates?: () => readonly CertificateExpiry[];
}

/** A certificate the gateway shows: the public listener's (`listener`), or the client certificate of a route's upstream connections. */
export interface CertificateExpiry {
  use: 'listener' | 'upstream_client';
  /** `public` for the listener; the route's name for an upstream client certificate (bounded by the config). */
  name: string;
  notAfterS: number;
}

export interface MetricsOptions {
  /** Process and Node metrics (off in tests that build many gateways). */
  processMetrics?: boolean;
  version?: string;
}

/** A count bumped on a hot path, taken into its counter when metrics are read. */
export class Tally {
  count = 0;

  inc(): void {
    this.count += 1;
  }

  /** The count so far, which starts again from 0. */
  take(): number {
    const count = this.count;
    this.count = 0;
    return count;
  }
}

export class Metrics {
  readonly registry = new Registry();
  #readings: LiveReadings = {};

  readonly requestDuration = new BoundHistogram({
    name: 'gatehouse_http_request_duration_seconds',
    help:
      "Requests answered by the public listener (proxied, the gateway's own endpoints, WebSocket handshakes), " +
      'by route, method and status; _count counts them.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly upstreamDuration = new BoundHistogram({
    name: 'gatehouse_upstream_duration_seconds',
    help: 'Time from sending a request upstream to its response head, by route.',
    labelNames: ['route'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly upstreamFailures = new Counter({
    name: 'gatehouse_upstream_failures_total',
    help: 'Upstream requests that failed, by route and kind (refused, reset, timeout, unresolvable, bad_response, other).',
    labelNames: ['route', 'kind'] as const,
    registers: [this.registry],
  });

  readonly authRefusals = new Counter({
    name: 'gatehouse_auth_refusals_total',
    help: 'Bearer tokens refused, by reason.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly peerDisagreements = new Gauge({
    name: 'gatehouse_peer_disagreements',
    help:
      'Instances sharing the store that disagree with this one, by view (keys: an instance does not trust a key another signs with; ' +
      'users: another users file digest; seal: this instance and those whose entries it cannot open, sealed with another secret), as of the last heartbeat.',
    labelNames: ['view'] as const,
    registers: [this.registry],
  });

  readonly usersLost = new Gauge({
    name: 'gatehouse_users_lost',
    help:
      '1 while the users held in the store (identity.usersIn: store) are lost: Redis forgot them since they were seeded ' +
      '(restore them with gatehouse users import); 0 otherwise.',
    registers: [this.registry],
    aggregator: 'max',
  });

  /** Counted per request in plain numbers (prom-client's inc() hashes its labels on every call); added to the counter when it is read. */
  readonly #tokenCacheLookups: Record<'hit' | 'miss', Tally> = { hit: new Tally(), miss: new Tally() };

  readonly tokenCache = new Counter({
    name: 'gatehouse_token_cache_lookups_total',
    help: 'Bearer checks answered from the verified-token cache (hit) or verified afresh (miss).',
    labelNames: ['result'] as const,
    registers: [this.registry],
    collect: () => {
      for (const result of ['hit', 'miss'] as const) {
        const tally = this.#tokenCacheLookups[result];
        if (tally.count > 0) this.tokenCache.inc({ result }, tally.take());
      }
    },
  });

  /** The count of one token-cache result, bumped by every bearer check. */
  tokenCacheLookups(result: 'hit' | 'miss'): Tally {
    return this.#tokenCacheLookups[result];
  }

  readonly loginEvents = new Counter({
    name: 'gatehouse_login_events_total',
    help: 'Logins and refreshes by method (password, api_key, refresh) and outcome (success, failure, throttled, lockout).',
    labelNames: ['method', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly throttled = new Counter({
    name: 'gatehouse_throttled_total',
    help:
      'Requests refused by a limit, by limit (login: login throttling, refresh: refresh throttling, route: a route rateLimit, ' +
      'password_hashing: the password-hashing queue full).',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly shedRequests = new Counter({
    name: 'gatehouse_shed_requests_total',
    help:
      'Requests the public listener refused from their head while the event loop was late (load shedding), by the level that shed ' +
      'them: unauthenticated (work without a credential known good), all (any other request, cached tokens included).',
    labelNames: ['level'] as const,
    registers: [this.registry],
  });

  readonly untrustedForwardedHeaders = new Counter({
    name: 'gatehouse_untrusted_forwarded_headers_total',
    help:
      'Requests carrying X-Forwarded-For or Forwarded from a peer not in server.trustedProxies: the headers were ignored and the peer ' +
      'taken as the client (a load balancer or ingress missing from that setting).',
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'gatehouse_rate_limited_total',
    help: "Proxied requests refused by their route's request limit, by route.",
    labelNames: ['route'] as const,
    registers: [this.registry],
  });

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

  /** Bound per operation and outcome by observability/store-metrics.ts: a DPoP proof or a rate limit pays one store command per request. */
  readonly storeCommandDuration = new BoundHistogram({
    name: 'gatehouse_store_command_duration_seconds',
    help: 'Store operations (sessions, request records, limits) by operation and outcome (ok, error).',
    labelNames: ['operation', 'outcome'] as const,
    buckets: STORE_BUCKETS,
    registers: [this.registry],
  });

  constructor(options: MetricsOptions = {}) {
    const readings = () => this.#readings;
    new Gauge({
      name: 'gatehouse_websocket_tunnels',
      help: 'Open WebSocket tunnels.',
      registers: [this.registry],
      collect() {
        this.set(readings().openTunnels?.() ?? 0);
      },
    });
    new Gauge({
      name: 'gatehouse_long_polls',
      help: 'Status requests waiting for a change (long polls).',
      registers: [this.registry],
      collect() {
        this.set(readings().openLongPolls?.() ?? 0);
      },
    });
    new Gauge({
      name: 'gatehouse_store_up',
      help: '1 while the store answers, 0 while it is unreachable.',
      registers: [this.registry],
      // Over workers: down if any one of them cannot reach it.
      aggregator: 'min',
      async collect() {
        const up = readings().storeUp;
        this.set(up === undefined || (await up()) ? 1 : 0);
      },
    });
    new Counter({
      name: 'gatehouse_connections_refused_total',
      help: 'Connections the public listener closed as they arrived, by cap (server.maxConnections, server.maxConnectionsPerAddress).',
      labelNames: ['cap'] as const,
      registers: [this.registry],
      collect() {
        const refused = readings().refusedConnections?.() ?? { total: 0, perAddress: 0 };
        this.reset();
        this.inc({ cap: 'connections' }, refused.total);
        this.inc({ cap: 'connections_per_address' }, refused.perAddress);
      },
    });
    new Gauge({
      name: 'gatehouse_certificate_not_after_timestamp_seconds',
      help: 'When each certificate the gateway shows stops being valid (its notAfter, seconds since the epoch), read at scrape time.',
      labelNames: ['use', 'name'] as const,
      registers: [this.registry],
      // Over workers: the one that expires first (all read the same files).
      aggregator: 'min',
      collect() {
        this.reset();
        for (const { use, name, notAfterS } of readings().certificates?.() ?? []) this.set({ use, name }, notAfterS);
      },
    });
    const buildInfo = new Gauge({
      name: 'gatehouse_build_info',
      help: 'Always 1; the version of Gatehouse and of Node.js in its labels.',
      labelNames: ['version', 'node'] as const,
      registers: [this.registry],
      aggregator: 'first',
    });
    buildInfo.set({ version: options.version ?? 'unknown', node: process.version }, 1);
    // Conventional unprefixed names (process_cpu_user_seconds_total, nodejs_eventloop_lag_seconds…):
    // dashboards and alerts written for any Node service find them.
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** What the live gauges read; given once the parts that know exist. */
  readFrom(readings: LiveReadings): void {
    this.#readings = { ...this.#readings, ...readings };
  }
}
