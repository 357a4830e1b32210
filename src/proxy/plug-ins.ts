// The small interfaces the proxy's plug-ins implement. The proxy declares
// what it asks of them and imports none of them: authz/ says who may use a
// route, requests/ takes over a 202. The composition root hands them in.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Principal } from '../core/principal.js';
import type { CompiledRoute } from '../routing/route-table.js';
import type { UpstreamResponse } from './engine.js';

/**
 * Whether the caller may use a route with a method (authz/); throws a 403 GatehouseError, synchronously.
 * `req`: its connection's client certificate, for rules that name one.
 */
export interface RouteGuard {
  check(route: CompiledRoute, method: string, principal: Principal, req: IncomingMessage): void;
}

/** What the proxy knows about the exchange a 202 answers. */
export interface AcceptedExchange {
  route: CompiledRoute;
  /** The origin of the target that answered. */
  upstream: string;
  /** Null on `auth: none` routes. */
  principal: Principal | null | undefined;
  /** The gateway's X-Request-Id, for the log. */
  reqId: string;
}

/** Takes over an upstream's 202 answer and writes it to the client (requests/: spec 4.4). */
export interface AcceptedAnswer {
  respond(res: ServerResponse, upstream: UpstreamResponse, headers: OutgoingHttpHeaders, exchange: AcceptedExchange): void;
}

/** The RateLimit-Policy and RateLimit field values of an answer (limits/quotas/). */
export interface RateLimitAnswerFields {
  readonly policy: string;
  readonly state: string;
}

/**
 * Counts a request against its route's quotas (limits/quotas/): resolves with
 * the RateLimit fields for the answer, rejects with a 429 (or a 503 when a limit
 * fails closed). `address`: whom an anonymous caller is counted as.
 */
export interface QuotaGate {
  take(route: CompiledRoute, principal: Principal | null, address: string): Promise<RateLimitAnswerFields | undefined>;
}
