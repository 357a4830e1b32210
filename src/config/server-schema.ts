// The `server` and `admin` sections of the config schema: the listeners
// (the public one with its health, and the admin one).
import { z } from 'zod';
import type { ContentChecks } from './content-check-hooks.js';
import * as d from './defaults.js';
import { ListenerHttp2Schema, ListenerTlsSchema } from './listener-tls-schema.js';
import { host, port, positiveInt, withoutIssues } from './schema-primitives.js';

/** The public listener: where clients connect, and the caps and deadlines that keep it answering. */
export function serverSchema(checks: ContentChecks) {
  return z.strictObject({
    /** The public listener's address (`0.0.0.0`: every interface). */
    host: host.default(d.DEFAULT_HOST),
    /** The public listener's port. */
    port: port.default(d.DEFAULT_PORT),
    /** Body limit of the gateway's own JSON endpoints; proxied routes have their own. */
    apiBodyLimitBytes: positiveInt.default(d.DEFAULT_API_BODY_LIMIT_BYTES),
    /**
     * Addresses or CIDRs whose `X-Forwarded-*` headers are believed, and whose
     * connections the per-address cap does not count. A peer not listed that
     * sends `X-Forwarded-For` or `Forwarded` is warned about once and counted
     * (`gatehouse_untrusted_forwarded_headers_total`).
     */
    trustedProxies: z
      .array(
        z
          .string()
          .min(1)
          .superRefine((entry, ctx): void => checks.trustedProxy(entry, ctx), { when: withoutIssues }),
      )
      .default([]),
    /**
     * Worker processes sharing the listeners (node:cluster): a number, or
     * `auto` for one per CPU. More than one needs a shared store (Redis);
     * the primary process alone writes the keys file.
     */
    workers: z.union([z.number().int().min(1).max(256), z.literal('auto')]).default(1),
    /**
     * After SIGTERM/SIGINT, how long requests in flight may take to finish
     * before they are cut (Kubernetes' terminationGracePeriodSeconds by default).
     */
    shutdownGraceS: z.number().int().min(0).max(3600).default(d.DEFAULT_SHUTDOWN_GRACE_S),
    /** Until a request's head has arrived, on both listeners (408 past it); at most `requestTimeoutMs`. */
    headersTimeoutMs: positiveInt.default(d.DEFAULT_HEADERS_TIMEOUT_MS),
    /**
     * Until a request to the gateway's own endpoints (login, refresh, token,
     * status; every admin request) has arrived whole, body included (408 past
     * it). Proxied requests have their route's `requestDeadlineMs` instead.
     */
    requestTimeoutMs: positiveInt.default(d.DEFAULT_REQUEST_TIMEOUT_MS),
    /** Open connections on the public listener; past it a new one is closed at once. */
    maxConnections: positiveInt.default(d.DEFAULT_MAX_CONNECTIONS),
    /** Open connections from one client address on the public listener (trusted proxies are not counted). */
    maxConnectionsPerAddress: positiveInt.default(d.DEFAULT_MAX_CONNECTIONS_PER_ADDRESS),
    /**
     * After an answer given before the request body was read (a 401, 413, 429,
     * 503…), the connection is not closed at once: the rest of the body is read
     * and thrown away, so that a client still sending it reads the answer
     * instead of a reset (nginx's lingering close). These bound it.
     */
    lingeringClose: z
      .strictObject({
        /** The longest a connection lingers after its early answer (nginx's lingering_time). */
        timeMs: positiveInt.default(d.DEFAULT_LINGERING_TIME_MS),
        /** The longest it waits for the next byte of the body (nginx's lingering_timeout). */
        idleTimeoutMs: positiveInt.default(d.DEFAULT_LINGERING_TIMEOUT_MS),
        /** The most body bytes it reads and throws away before closing. */
        maxBytes: positiveInt.default(d.DEFAULT_LINGERING_MAX_BYTES),
      })
      .prefault({}),
    /** TLS on the public listener (certificate files, reloaded when they change); absent: plain HTTP/1.1. */
    tls: ListenerTlsSchema.optional(),
    /** HTTP/2 to clients on the TLS listener. */
    http2: ListenerHttp2Schema.prefault({}),
    health: HealthSchema.prefault({}),
  });
}

/**
 * Where `/healthz` and `/readyz` answer, so that a load balancer on another
 * host needs neither the internal status API nor `/metrics`. The admin
 * listener answers them in every case.
 */
export const HealthSchema = z.strictObject({
  /**
   * `admin`: on the admin listener only. `public`: also on the public
   * listener, where the two paths are then the gateway's own (no route may
   * claim them, a route on `/` does not get them). `own`: also on a
   * health-only listener at `host`:`port`.
   */
  on: z.enum(['admin', 'public', 'own']).default('admin'),
  /** The health-only listener's address (`on: own`). */
  host: host.default(d.DEFAULT_HEALTH_HOST),
  /** The health-only listener's port (`on: own`). */
  port: port.default(d.DEFAULT_HEALTH_PORT),
});

/** The admin listener: health (`/healthz`), readiness (`/readyz`), metrics (`/metrics`) and the internal status API backends report to. */
export const AdminSchema = z.strictObject({
  /** Open the admin listener at all. */
  enabled: z.boolean().default(true),
  /** Its address: loopback by default, reachable from this machine only. */
  host: host.default(d.DEFAULT_ADMIN_HOST),
  /** Its port. */
  port: port.default(d.DEFAULT_ADMIN_PORT),
  /** Open connections on the admin listener, its own cap: a flood of the public one never reaches it. */
  maxConnections: positiveInt.default(d.DEFAULT_ADMIN_MAX_CONNECTIONS),
});
