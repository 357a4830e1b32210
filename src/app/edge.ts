// Stage: the edge, where a request arrives and the gateway's answer leaves:
// the public listener with its front door (flood refusals from the request
// head) and CORS, WebSocket upgrades handed to the proxy, the gateway's own
// endpoints (login, OAuth, account, status; server/gateway-endpoints.ts),
// health on the public listener or one of its own, and the admin listener
// (readiness, metrics, the internal status API). Listeners are built in
// server/; this stage only joins them to the other stages' parts.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { issuerPortWarning } from '../config-load/issuer-default.js';
import { CorsPolicy } from '../cors/cors-policy.js';
import { Passkeys } from '../factors/passkeys.js';
import type { Drain } from '../http/drain.js';
import { refusedConnections } from '../limits/connection-limits.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestTelemetry } from '../observability/request-telemetry.js';
import { adminListener } from '../server/admin-listener.js';
import { FrontDoor } from '../server/front-door.js';
import { registerGatewayEndpoints } from '../server/gateway-endpoints.js';
import { healthOptions, placeHealth } from '../server/health-listeners.js';
import { openListeners } from '../server/open-listeners.js';
import { publicListener } from '../server/public-listener.js';
import { listenerCertificates } from '../server/secure-listener.js';
import type { Store } from '../store/store.js';
import type { AccessStage } from './access.js';
import type { AsyncRequestsStage } from './async-requests.js';
import type { IdentityAndTokensStage } from './identity-and-tokens.js';
import type { LiveParts } from './live-parts.js';
import type { ProxyStage } from './proxy.js';

export interface EdgeDeps {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  telemetry: RequestTelemetry;
  store: Store;
  access: AccessStage;
  identity: IdentityAndTokensStage;
  asyncRequests: AsyncRequestsStage;
  proxy: ProxyStage;
  live: LiveParts;
  drain: Drain;
}

export interface ListenerUrls {
  url: string;
  adminUrl: string | undefined;
  healthUrl: string | undefined;
}

export interface EdgeStage {
  app: FastifyInstance;
  admin: FastifyInstance | undefined;
  /** Starts the listeners; resolves with the addresses they bound (`healthUrl`: `server.health.on: own`). */
  listen(): Promise<ListenerUrls>;
  /** Starts the drain in this same tick (readiness 503 at once); resolves with the connections cut still busy after `graceMs`. */
  drain(graceMs: number): Promise<number>;
  /**
   * The admin and health listeners, last: readiness answers 503 (not a refused
   * connection) and backends can still report outcomes while the public one drains.
   */
  close(): Promise<void>;
}

export async function openEdge(deps: EdgeDeps): Promise<EdgeStage> {
  const { config, logger, metrics, telemetry, store, access, identity, asyncRequests, proxy, live, drain } = deps;
  const { clientAddress, abuse, passwordHashing, load } = access;
  const { mode, keys } = identity;
  const { requests } = asyncRequests;
  const cors = new CorsPolicy({ gateway: () => live.gatewayCors, routes: () => live.routes });
  const front = new FrontDoor({ abuse, passwordHashing, load, bearer: mode.bearer, clientAddress, metrics });
  const app = publicListener(config, logger, proxy.proxy.handle, drain, telemetry, clientAddress, metrics, cors, front);
  metrics.readFrom({
    openTunnels: () => proxy.websockets.openTunnels,
    openLongPolls: () => requests.watching,
    refusedConnections: () => refusedConnections(app.server),
    certificates: () => [...listenerCertificates(app.server), ...live.routes.clientCertificates()],
  });
  app.server.on('upgrade', proxy.websockets.handleUpgrade);
  await registerGatewayEndpoints(app, {
    config,
    auth: mode.auth,
    bearer: mode.bearer,
    clientAddress,
    keys,
    passwordHashing,
    holdings: proxy.holdings,
    requests,
    reconciler: asyncRequests.reconciler,
    tokenService: mode.local?.service,
    account: identity.account,
    factors: mode.local?.factors,
    passkeys: mode.local && config.account.passkeys && new Passkeys({ users: mode.local.users, store, origin: config.account.passkeys.origin }),
    ownLimits: (principal) => access.quotas.usageOf(live.routes.table.routes, principal),
    backchannelLogout: mode.backchannelLogout,
    logoutTokenThrottle: mode.logoutTokenThrottle,
  });
  const health = healthOptions({
    store,
    drain,
    keys,
    logger,
    publicApp: app,
    identityReady: mode.ready,
    usersLoss: mode.usersLoss,
    agreement: identity.agreement,
    load,
  });
  const admin = await adminListener(config, logger, { metrics, requests, health, audit: identity.audit.records });
  // Health on the public listener too, or on one of its own (`server.health.on`).
  const healthOnly = await placeHealth(config, logger, app, health);
  return {
    app,
    admin,
    async listen() {
      const addresses = await openListeners({ config, app, admin, healthOnly, peers: identity.sharedKeys });
      const issuerWarning = mode.local && issuerPortWarning(config.tokens.issuer, config.server.port, app.server.address());
      if (issuerWarning) logger.warn(issuerWarning);
      logger.info({ ...addresses, store: store.kind }, 'gatehouse listening');
      return addresses;
    },
    drain: (graceMs) => drain.run(app.server, app.close(), graceMs),
    async close() {
      await admin?.close();
      await healthOnly?.close();
    },
  };
}
