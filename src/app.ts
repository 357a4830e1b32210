// Assembles Gatehouse in one readable order: state, identity, keys, the
// services that use them, then the public and admin listeners' plugins.
// Nothing else knows this file; tests and `main.ts` both start here.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { AuthService } from './auth/auth-service.js';
import { authRoutes } from './auth/auth-routes.js';
import { tokenEndpoint } from './auth/token-endpoint.js';
import { BearerAuthenticator } from './auth/bearer-authenticator.js';
import { ConfigError, loadConfig } from './config/load.js';
import { DEFAULT_STATUS_POLL_INTERVAL_MS, DEFAULT_STATUS_TIMEOUT_MS } from './config/defaults.js';
import type { Config } from './config/schema.js';
import { watchConfigFile } from './config/watch-config.js';
import { diagnosticsJson } from './http/diagnostics.js';
import { answerFrameworkError, errorHandler } from './http/error-handler.js';
import { gatehouseError } from './http/errors.js';
import { isGatewayPath } from './http/gateway-paths.js';
import { createIdentityProvider } from './identity/create-identity-provider.js';
import type { IdentityProvider } from './identity/identity-provider.js';
import { healthRoutes } from './observability/health.js';
import { createLogger } from './observability/logger.js';
import { Metrics } from './observability/metrics.js';
import { metricsRoute } from './observability/metrics-route.js';
import { requestId } from './observability/request-id.js';
import { HttpProxyEngine } from './proxy/engines/http-proxy-engine.js';
import { UndiciEngine } from './proxy/engines/undici-engine.js';
import { ProxyHandler } from './proxy/proxy-handler.js';
import { ProxyRoutes } from './proxy/proxy-routes.js';
import { HeaderPolicy } from './proxy/upstream-headers.js';
import { TargetRegistry } from './proxy/upstream-pool.js';
import { WebSocketProxy } from './proxy/websocket.js';
import { AsyncCapture } from './requests/async-capture.js';
import { internalRoutes } from './requests/internal-routes.js';
import { RequestTracker } from './requests/request-tracker.js';
import { statusRoutes } from './requests/status-routes.js';
import { UpstreamReconciler } from './requests/upstream-reconciler.js';
import { createStore } from './store/create-store.js';
import type { Store } from './store/store.js';
import { TokenIssuer } from './tokens/issuer.js';
import { loadKeySet, type KeySet } from './tokens/keyset.js';
import { TokenVerifier } from './tokens/verifier.js';
import { wellKnownRoutes } from './tokens/well-known-routes.js';

export interface GatewayOptions {
  logger?: Logger;
  /** A store shared with the caller (tests run two gateways on one store). */
  store?: Store;
  /** The config file, watched for route changes (absent: routes are fixed). */
  configFile?: string;
}

export interface Gateway {
  readonly config: Config;
  readonly logger: Logger;
  readonly app: FastifyInstance;
  readonly admin: FastifyInstance | undefined;
  readonly store: Store;
  readonly identity: IdentityProvider;
  readonly keys: KeySet;
  readonly auth: AuthService;
  readonly bearer: BearerAuthenticator;
  readonly metrics: Metrics;
  /** Request records of asynchronous operations (spec 4.3, 4.4), with their outbox. */
  readonly requests: RequestTracker;
  /** Re-reads the config file and swaps in its routes; a bad file changes nothing. */
  reloadRoutes(): Promise<boolean>;
  /** Starts both listeners; resolves with the addresses they bound. */
  listen(): Promise<{ url: string; adminUrl: string | undefined }>;
  /** Stops taking connections, finishes what is in flight, releases everything. */
  close(): Promise<void>;
}

export async function createGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  const logger = options.logger ?? createLogger(config);
  const ownStore = !options.store;
  const store = options.store ?? (await createStore(config.store, logger));
  const identity = await createIdentityProvider(config.identity, logger);
  const keys = await loadKeySet({
    file: config.tokens.keysFile,
    algorithm: config.tokens.algorithm,
    retainS: config.tokens.refreshTokenTtlS,
    logger,
    watch: true,
  });
  const { issuer, audience, accessTokenTtlS, refreshTokenTtlS, clockToleranceS } = config.tokens;
  const verifier = new TokenVerifier({ keys, issuer, audience, clockToleranceS });
  const auth = new AuthService({
    identity,
    store,
    issuer: new TokenIssuer({ keys, issuer, audience, accessTokenTtlS, refreshTokenTtlS }),
    verifier,
    refreshTokenTtlS,
    logger,
  });
  const bearer = new BearerAuthenticator({ verifier, store, identity, maxEntries: config.tokens.cacheMaxEntries, logger });
  const metrics = new Metrics();
  const requests = new RequestTracker({
    store,
    metrics,
    logger,
    retentionMs: config.requests.retentionS * 1000,
    retryAfterS: config.requests.retryAfterS,
    outboxMaxEntries: config.requests.outboxMaxEntries,
  });
  const capture = new AsyncCapture({ tracker: requests, metrics, logger, retryAfterS: config.requests.retryAfterS });

  const registry = new TargetRegistry({ maxSocketsPerTarget: config.proxy.maxSocketsPerTarget });
  let routes = ProxyRoutes.compile(config.routes, config.proxy, registry);
  const engine = config.proxy.engine === 'undici'
    ? new UndiciEngine({ connectionsPerTarget: config.proxy.maxSocketsPerTarget })
    : new HttpProxyEngine(config.proxy.engine);
  const headers = new HeaderPolicy({ identityHeaders: config.proxy.identityHeaders, trustedProxies: config.server.trustedProxies });
  const proxy = new ProxyHandler({ routes: () => routes, bearer, headers, engine, logger, accessLog: config.log.access, capture });
  // A record names its route; the route's settings as they are now (reloads included) apply.
  const reconciler = new UpstreamReconciler({
    tracker: requests,
    logger,
    routeSettings: (name) => routes.table.routes.find((route) => route.name === name)?.config.async,
    defaults: { statusPollIntervalMs: DEFAULT_STATUS_POLL_INTERVAL_MS, statusTimeoutMs: DEFAULT_STATUS_TIMEOUT_MS },
  });
  const websockets = new WebSocketProxy({ routes: () => routes, bearer, headers, logger });

  const app = publicListener(config, logger, proxy.handle);
  app.server.on('upgrade', websockets.handleUpgrade);
  await app.register(errorHandler);
  await app.register(wellKnownRoutes, { keys, tokens: config.tokens });
  await app.register(authRoutes, { auth, bodyLimitBytes: config.server.apiBodyLimitBytes });
  await app.register(tokenEndpoint, { auth, bodyLimitBytes: config.server.apiBodyLimitBytes });
  await app.register(statusRoutes, {
    bearer,
    tracker: requests,
    reconciler,
    retryAfterS: config.requests.retryAfterS,
    maxWaitS: config.requests.maxWaitS,
    bodyLimitBytes: config.server.apiBodyLimitBytes,
  });

  // What a reload can change: the routes, and how long a failed target is
  // skipped. Everything else is read once, at start.
  const reloadable = (c: Config) => JSON.stringify([c.routes, c.proxy.targetDownMs]);
  const restartOnly = (c: Config) => ({ ...c, routes: [], proxy: { ...c.proxy, targetDownMs: 0 } });
  let applied = reloadable(config);
  const running = restartOnly(config);

  /** Re-reads the file; `ifChanged` skips the swap (and its log line) when the routes are the same. */
  function reload(ifChanged: boolean): boolean {
    if (!options.configFile) return false;
    let next: Config;
    try {
      next = loadConfig({ file: options.configFile });
      if (ifChanged && reloadable(next) === applied) return true;
      routes = ProxyRoutes.compile(next.routes, next.proxy, registry);
    } catch (error) {
      const problems = error instanceof ConfigError ? error.problems : [(error as Error).message];
      logger.error({ file: options.configFile, problems }, 'config change refused; the previous routes stay in force');
      return false;
    }
    applied = reloadable(next);
    logger.info({ file: options.configFile, routes: next.routes.length }, 'routes reloaded');
    const candidate = restartOnly(next);
    const ignored = (Object.keys(running) as Array<keyof Config>).filter((key) => JSON.stringify(running[key]) !== JSON.stringify(candidate[key]));
    if (ignored.length > 0) logger.warn({ file: options.configFile, sections: ignored }, 'config changes outside the routes take effect only after a restart');
    return true;
  }
  async function reloadRoutes(): Promise<boolean> {
    return reload(false);
  }
  const stopWatching = options.configFile ? watchConfigFile(options.configFile, () => void reload(false)) : () => {};
  // The watcher only sees edits from now on: one made since the config was
  // loaded (the store, identity and keys take a while) would wait for the next.
  if (options.configFile) reload(true);

  let admin: FastifyInstance | undefined;
  if (config.admin.enabled) {
    admin = Fastify({
      loggerInstance: logger.child({ listener: 'admin' }) as FastifyBaseLogger,
      logController: new LogController({ disableRequestLogging: true }),
      frameworkErrors: answerFrameworkError,
    });
    await admin.register(errorHandler);
    await admin.register(healthRoutes, { store });
    await admin.register(metricsRoute, { metrics });
    await admin.register(internalRoutes, {
      tracker: requests,
      serviceToken: config.requests.serviceToken,
      bodyLimitBytes: config.server.apiBodyLimitBytes,
      logger,
    });
  }

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
    requests,
    reloadRoutes,
    async listen() {
      const url = await app.listen({ host: config.server.host, port: config.server.port });
      const adminUrl = admin ? await admin.listen({ host: config.admin.host, port: config.admin.port }) : undefined;
      logger.info({ url, adminUrl, store: store.kind }, 'gatehouse listening');
      return { url, adminUrl };
    },
    async close() {
      stopWatching();
      websockets.close();
      // Long polls answer now instead of holding the listeners open.
      requests.endWatches();
      await Promise.allSettled([app.close(), admin?.close()]);
      reconciler.close();
      // Before the store closes: the outbox gets its last chance to be written.
      await requests.close();
      engine.close();
      registry.close();
      bearer.close();
      keys.close();
      await identity.close();
      if (ownStore) await store.close();
    },
  };
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** Fastify's default: longer than the idle timeout of common load balancers (60 s). */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

function answerUnparsableRequest(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const body = diagnosticsJson(
    gatehouseError('invalid_request', { reason: tooLarge ? 'request headers are too large' : 'the request is not valid HTTP/1.1' }),
  );
  socket.end(
    `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * The public listener: Fastify serves the gateway's own endpoints; every
 * other request goes straight to the proxy's handler on the raw node:http
 * request, without Fastify's routing and hooks on the hot path.
 */
function publicListener(config: Config, logger: Logger, proxy: RequestListener): FastifyInstance {
  const { trustedProxies, apiBodyLimitBytes } = config.server;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    serverFactory: (fastify: RequestListener) => {
      const server = createServer((req, res) => {
        if (isGatewayPath(req.url ?? '/')) fastify(req, res);
        else proxy(req, res);
      });
      // Fastify sets these only on servers it creates itself. No overall
      // request deadline: a large upload may stream for as long as it flows.
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      server.requestTimeout = 0;
      return server;
    },
    // Requests Node's parser refuses never reach a handler; answer them in the diagnostics format too.
    clientErrorHandler: answerUnparsableRequest,
    frameworkErrors: answerFrameworkError,
    genReqId: requestId,
    // One access-log line per request (onResponse below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: trustedProxies.length > 0 ? [...trustedProxies] : false,
    bodyLimit: apiBodyLimitBytes,
    return503OnClosing: true,
    // Never coerce types: a numeric password must be refused, not turned into a string.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  if (config.log.access) {
    app.addHook('onResponse', async (request, reply) => {
      request.log.info({ req: request, res: reply, responseTimeMs: Math.round(reply.elapsedTime * 100) / 100 }, 'request completed');
    });
  }
  return app;
}
