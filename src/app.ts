// Assembles Gatehouse in one readable order: state, identity, keys, the
// services that use them, then the public and admin listeners' plugins.
// Nothing else knows this file; tests and `main.ts` both start here. It
// assembles and decides nothing: the config arrives checked (config-load/check.ts,
// before any file is written or socket opened), listeners are built in
// server/public-listener.ts and server/admin-listener.ts, and hot reloads are config-load/reload.ts's.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AccountService } from './account/account-service.js';
import type { ApiKeyDirectory } from './account/api-key-directory.js';
import { FileApiKeys } from './account/file-api-keys.js';
import { StoreApiKeys } from './account/store-api-keys.js';
import type { Authentication } from './auth/auth-service.js';
import { RouteAuthorization } from './authz/route-authorization.js';
import { CorsPolicy } from './cors/cors-policy.js';
import { BearerAuthenticator } from './auth/bearer-authenticator.js';
import { DEFAULT_STATUS_POLL_INTERVAL_MS, DEFAULT_STATUS_TIMEOUT_MS } from './config/defaults.js';
import { issuerPortWarning } from './config-load/issuer-default.js';
import { ConfigReloader } from './config-load/reload.js';
import type { Config } from './config/schema.js';
import { compileClientAddress } from './http/client-address.js';
import { Drain } from './http/drain.js';
import { adminListener } from './server/admin-listener.js';
import { healthOptions, placeHealth } from './server/health-listeners.js';
import { registerGatewayEndpoints } from './server/gateway-endpoints.js';
import { FrontDoor } from './server/front-door.js';
import { openListeners } from './server/open-listeners.js';
import { publicListener } from './server/public-listener.js';
import { listenerCertificates } from './server/secure-listener.js';
import type { IdentityProvider } from './identity/identity-provider.js';
import type { PasswordVerifier } from './identity/password-check-options.js';
import { createIdentityMode } from './identity-mode.js';
import type { AbuseGuard } from './limits/abuse-guard.js';
import type { FairWorkQueue } from './limits/fair-work-queue.js';
import { floodDefences } from './limits/flood-defences.js';
import type { LoadShedder } from './limits/load-shedder.js';
import { LimiterFactory } from './limits/limiters.js';
import { RouteLimits } from './limits/route-limits.js';
import { createLogger } from './observability/logger.js';
import { refusedConnections } from './limits/connection-limits.js';
import { Metrics } from './observability/metrics.js';
import { PeerAgreement } from './observability/peer-agreement.js';
import { RequestTelemetry } from './observability/request-telemetry.js';
import { createSpanExport } from './observability/span-export.js';
import { measuredStore } from './observability/store-metrics.js';
import { GATEHOUSE_VERSION } from './observability/version.js';
import type { ForwardingEngine } from './proxy/engine.js';
import { Admission } from './proxy/admission.js';
import { createCachedLookup } from './proxy/dns-cache.js';
import { UndiciEngine } from './proxy/engines/undici-engine.js';
import { ProxyHandler } from './proxy/proxy-handler.js';
import { ProxyRoutes } from './proxy/proxy-routes.js';
import { SessionHoldings } from './proxy/session-holdings.js';
import { headerPolicyFor } from './proxy/upstream-headers.js';
import { TargetRegistry } from './proxy/upstream-pool.js';
import { WebSocketProxy } from './proxy/websocket.js';
import { AsyncCapture } from './async-requests/async-capture.js';
import { openRequestTracker } from './async-requests/open-tracker.js';
import type { RequestTracker } from './async-requests/request-tracker.js';
import { reconcileSettings, UpstreamReconciler } from './async-requests/upstream-reconciler.js';
import { createStore } from './store/create-store.js';
import type { Store } from './store/store.js';
import type { KeySet } from './tokens/keyset.js';
import { loadSigningKeys } from './tokens/share-keys.js';

export interface GatewayOptions {
  logger?: Logger;
  /** A store shared with the caller (tests run two gateways on one store). */
  store?: Store;
  /** The config file, watched for changes of its live sections (absent: they are fixed); see config-load/reload.ts. */
  configFile?: string;
  /**
   * Forwards proxied requests instead of undici: the benchmark's comparison
   * engines (bench/engines/) measured on this same hot path. Closed with the gateway.
   */
  engine?: ForwardingEngine;
  /** Only read the keys file, never create or rotate it: a cluster worker, whose primary prepared it. */
  readOnlyKeys?: boolean;
  /** Checks passwords in place of scrypt: tests hold it to see what waits behind password hashing. */
  verifyPassword?: PasswordVerifier;
}

export interface Gateway {
  readonly config: Config;
  readonly logger: Logger;
  readonly app: FastifyInstance;
  readonly admin: FastifyInstance | undefined;
  readonly store: Store;
  readonly identity: IdentityProvider;
  readonly keys: KeySet;
  readonly auth: Authentication;
  readonly bearer: BearerAuthenticator;
  readonly metrics: Metrics;
  /** Where every login's password hashing waits for its turn. */
  readonly passwordHashing: FairWorkQueue;
  /** What is remembered of addresses that keep sending refused work (limits/abuse-guard.ts). */
  readonly abuse: AbuseGuard;
  /** Load shedding on event-loop delay (limits/load-shedder.ts). */
  readonly load: LoadShedder;
  /** Request records of asynchronous operations (spec 4.3, 4.4), with their outbox. */
  readonly requests: RequestTracker;
  /** Re-reads the config file and puts its live sections in force (routes, authorization, cors); a bad or restart-needing edit changes nothing. */
  reloadRoutes(): Promise<boolean>;
  /** Starts the listeners; resolves with the addresses they bound (`healthUrl`: `server.health.on: own`). */
  listen(): Promise<{ url: string; adminUrl: string | undefined; healthUrl: string | undefined }>;
  /**
   * Stops taking connections, drains (readiness 503, `Connection: close`,
   * idle connections closed), lets what is in flight finish for up to
   * `graceMs` (`server.shutdownGraceS` by default), cuts the rest, flushes the
   * outbox and releases everything. Resolves with the number of connections
   * that were cut while still busy.
   */
  close(options?: { graceMs?: number }): Promise<number>;
}

export async function createGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  const logger = options.logger ?? createLogger(config);
  const ownStore = !options.store;
  const metrics = new Metrics({ version: GATEHOUSE_VERSION });
  const store = measuredStore(options.store ?? (await createStore(config.store, logger, config.limits)), metrics);
  // Addresses that keep sending refused work (their logins wait behind clean addresses'), the hashing queue, load shedding on loop delay.
  const { abuse, passwordHashing, load, close: closeFloodDefences } = floodDefences(config.limits, metrics);
  // Keys users make for themselves live in Redis when there is one (account/), beside the users file's.
  const storeKeys = store.apiKeys ? new StoreApiKeys(store.apiKeys) : undefined;
  let userKeys: ApiKeyDirectory | undefined = storeKeys;
  // Only local mode signs tokens; with Redis, every instance's published keys verify (tokens/shared-keyset.ts).
  const { keys, shared: sharedKeys } = await loadSigningKeys(config, store, logger, { readOnly: options.readOnlyKeys ?? false });
  const agreement = sharedKeys && new PeerAgreement(sharedKeys, metrics, logger);
  const limiters = new LimiterFactory(store);
  // Local users and tokens, or a fronted OpenID Provider's: the one bearer rule either way.
  const mode = await createIdentityMode({
    attempts: abuse,
    config,
    store,
    keys,
    limiters,
    logger,
    metrics,
    passwords: {
      hashing: passwordHashing,
      ...(options.verifyPassword && { verifyPassword: options.verifyPassword }),
      ...(storeKeys && { storeKeys }),
      onApiKeyUsed: (keyId) => userKeys?.recordUse(keyId, Date.now()),
    },
  });
  const { identity, auth, bearer } = mode;
  const requests = await openRequestTracker(config, store, metrics, logger);
  const capture = new AsyncCapture({ tracker: requests, metrics, logger, retryAfterS: config.requests.retryAfterS });

  const registry = new TargetRegistry();
  let routes = ProxyRoutes.compile(config.routes, config.proxy, registry);
  // Upstream host names are looked up once, not per connection on the thread pool password hashing holds.
  const lookup = createCachedLookup({ ttlMs: config.proxy.dnsCacheTtlS * 1000 });
  const engine = options.engine ?? new UndiciEngine({ connectionsPerTarget: config.proxy.maxSocketsPerTarget, lookup });
  // The client's address, one reading for limits, throttling, logs and the X-Forwarded-For sent upstream.
  const clientAddress = compileClientAddress(config.server.trustedProxies);
  const headers = headerPolicyFor(config, keys, clientAddress);
  // One admission step for HTTP and WebSocket alike.
  const admission = new Admission({
    routes: () => routes,
    bearer,
    headers,
    clientAddress,
    limits: new RouteLimits(limiters, metrics),
    abuse,
    authorization: new RouteAuthorization(identity, { acrRanks: mode.acrRanks }),
  });
  const drain = new Drain();
  // One access line and the request metrics for every request: proxied, the gateway's own, WebSocket.
  // Spans over OTLP only when configured; otherwise the SDK is never loaded.
  const spans = await createSpanExport(config.tracing);
  const telemetry = new RequestTelemetry({ logger, metrics, accessLog: config.log.access, spans });
  // What each session holds open (exchanges, tunnels, long polls): all of it ends with its session.
  const holdings = new SessionHoldings({ sessions: bearer, identity, logger });
  const proxy = new ProxyHandler({
    admission,
    headers,
    clientAddress,
    engine,
    logger,
    telemetry,
    metrics,
    capture,
    drain,
    holdings,
    lingering: config.server.lingeringClose,
  });
  // A record names its route; the route's settings as they are now (reloads included) apply.
  const reconciler = new UpstreamReconciler({
    tracker: requests,
    logger,
    routeSettings: (name) => reconcileSettings(routes, name),
    defaults: { statusPollIntervalMs: DEFAULT_STATUS_POLL_INTERVAL_MS, statusTimeoutMs: DEFAULT_STATUS_TIMEOUT_MS },
  });
  const websockets = new WebSocketProxy({ admission, holdings, headers, clientAddress, logger, lookup, telemetry });
  let gatewayCors = config.cors;
  const cors = new CorsPolicy({ gateway: () => gatewayCors, routes: () => routes });
  const front = new FrontDoor({ abuse, passwordHashing, load, bearer, clientAddress, metrics });
  const app = publicListener(config, logger, proxy.handle, drain, telemetry, clientAddress, metrics, cors, front);
  metrics.readFrom({
    openTunnels: () => websockets.openTunnels,
    openLongPolls: () => requests.watching,
    refusedConnections: () => refusedConnections(app.server),
    certificates: () => [...listenerCertificates(app.server), ...routes.clientCertificates()],
  });
  app.server.on('upgrade', websockets.handleUpgrade);
  // The account page and API: the local users' own (a fronted provider manages its accounts itself).
  let account: AccountService | undefined;
  if (config.account.enabled && mode.local) {
    const fileKeys = new FileApiKeys(mode.local.users);
    userKeys ??= fileKeys;
    account = new AccountService({ identity: mode.local.users, keys: userKeys, fileKeys, store, settings: config.account, logger });
  }
  await registerGatewayEndpoints(app, {
    config,
    auth,
    bearer,
    clientAddress,
    limiters,
    keys,
    passwordHashing,
    holdings,
    requests,
    reconciler,
    tokenService: mode.local?.service,
    account,
    factors: mode.local?.factors,
    backchannelLogout: mode.backchannelLogout,
  });
  const reloader = options.configFile
    ? new ConfigReloader({
        file: options.configFile,
        running: config,
        logger,
        apply: (next) => {
          routes = ProxyRoutes.compile(next.routes, next.proxy, registry);
          gatewayCors = next.cors;
        },
      })
    : undefined;
  reloader?.watch();

  const health = healthOptions({ store, drain, keys, logger, publicApp: app, identityReady: mode.ready, usersLoss: mode.usersLoss, agreement, load });
  const admin = await adminListener(config, logger, { metrics, requests, health });
  // Health on the public listener too, or on one of its own (`server.health.on`).
  const healthOnly = await placeHealth(config, logger, app, health);

  return {
    config,
    logger,
    app,
    admin,
    store,
    identity,
    keys,
    auth,
    bearer,
    metrics,
    passwordHashing,
    abuse,
    load,
    requests,
    async reloadRoutes() {
      return reloader?.reload() ?? false;
    },
    async listen() {
      const addresses = await openListeners({ config, app, admin, healthOnly, peers: sharedKeys });
      const issuerWarning = mode.local && issuerPortWarning(config.tokens.issuer, config.server.port, app.server.address());
      if (issuerWarning) logger.warn(issuerWarning);
      logger.info({ ...addresses, store: store.kind }, 'gatehouse listening');
      return addresses;
    },
    async close({ graceMs = config.server.shutdownGraceS * 1000 } = {}) {
      // Readiness turns 503 in this same tick: the drain starts before the first await.
      const cut = drain.run(app.server, app.close(), graceMs);
      reloader?.close();
      websockets.close();
      // Long polls answer now instead of holding the listeners open.
      requests.endWatches();
      const cutCount = await cut;
      // The admin and health listeners last: readiness answers 503 (not a refused
      // connection) and backends can still report outcomes while the public one drains.
      await admin?.close();
      await healthOnly?.close();
      holdings.close();
      reconciler.close();
      closeFloodDefences();
      // Before the store closes: the outbox gets its last chance to be written.
      await requests.close();
      engine.close();
      await keys.close();
      await mode.close();
      if (ownStore) await store.close();
      // The last spans go out before the process may exit; a collector that is gone does not hold the stop.
      await spans?.close().catch((error: unknown) => logger.warn({ err: error }, 'spans could not be sent to the collector'));
      return cutCount;
    },
  };
}
