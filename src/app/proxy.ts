// Stage: where the proxy decides and forwards: one admission step for HTTP and
// WebSocket alike (the route, the bearer rule, the route's rule and rate
// limit), the header policy (the caller told upstream in identity headers or a
// signed backend assertion), the forwarding engine (undici, or a benchmark's)
// with upstream host names looked up once rather than per connection on the
// thread pool password hashing holds, and what each session holds open
// (exchanges, tunnels, long polls), all of which ends with its session.
import type { Logger } from 'pino';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import { RouteAuthorization } from '../authz/route-authorization.js';
import type { Config } from '../config/schema.js';
import type { Drain } from '../http/drain.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestTelemetry } from '../observability/request-telemetry.js';
import { Admission } from '../proxy/admission.js';
import { createCachedLookup } from '../proxy/dns-cache.js';
import type { ForwardingEngine } from '../proxy/engine.js';
import { UndiciEngine } from '../proxy/engines/undici-engine.js';
import { ProxyHandler } from '../proxy/proxy-handler.js';
import { SessionHoldings } from '../proxy/session-holdings.js';
import { HeaderPolicy } from '../proxy/upstream-headers.js';
import { WebSocketProxy } from '../proxy/websocket.js';
import { IdentityAssertions } from '../tokens/backend-assertion.js';
import type { KeySet } from '../tokens/keyset.js';
import type { IdentityProvider } from '../users/identity-provider.js';
import type { AccessStage } from './access.js';
import type { AsyncRequestsStage } from './async-requests.js';
import type { LiveParts } from './live-parts.js';

export interface ProxyDeps {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  telemetry: RequestTelemetry;
  access: AccessStage;
  identity: IdentityProvider;
  bearer: BearerAuthenticator;
  /** The levels (`acr`) the identity mode's tokens carry, lowest first: what a route's `authorize.acr` is ranked by. */
  acrRanks: readonly string[];
  keys: KeySet;
  asyncRequests: AsyncRequestsStage;
  live: LiveParts;
  drain: Drain;
  /** Forwards in place of undici (the benchmark's comparison engines); closed with the gateway. */
  engine?: ForwardingEngine | undefined;
}

export interface ProxyStage {
  proxy: ProxyHandler;
  websockets: WebSocketProxy;
  holdings: SessionHoldings;
  /** Ends the open tunnels (the drain's start): they would hold the listeners open. */
  endTunnels(): void;
  close(): void;
}

export function openProxy(deps: ProxyDeps): ProxyStage {
  const { config, logger, metrics, telemetry, access, identity, bearer, live, drain } = deps;
  const { clientAddress } = access;
  const lookup = createCachedLookup({ ttlMs: config.proxy.dnsCacheTtlS * 1000 });
  const engine = deps.engine ?? new UndiciEngine({ connectionsPerTarget: config.proxy.maxSocketsPerTarget, lookup });
  // Names and allowances from `proxy`; backend assertions signed with the gateway's keys for `tokens.issuer`.
  const { identityHeaders, allowClientHeaders } = config.proxy;
  const assertions = new IdentityAssertions({ keys: deps.keys, issuer: config.tokens.issuer });
  const headers = new HeaderPolicy({ identityHeaders, clientAddress, allowClientHeaders, assertions });
  const admission = new Admission({
    routes: () => live.routes,
    bearer,
    headers,
    clientAddress,
    limits: access.routeLimits,
    quotas: access.quotas,
    abuse: access.abuse,
    authorization: new RouteAuthorization(identity, { acrRanks: deps.acrRanks }),
  });
  const holdings = new SessionHoldings({ sessions: bearer, identity, logger });
  const proxy = new ProxyHandler({
    admission,
    headers,
    clientAddress,
    engine,
    logger,
    telemetry,
    metrics,
    capture: deps.asyncRequests.capture,
    drain,
    holdings,
    lingering: config.server.lingeringClose,
  });
  const websockets = new WebSocketProxy({ admission, holdings, headers, clientAddress, logger, lookup, telemetry });
  return {
    proxy,
    websockets,
    holdings,
    endTunnels: () => websockets.close(),
    close() {
      holdings.close();
      engine.close();
    },
  };
}
