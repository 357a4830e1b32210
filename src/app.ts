// Assembles Gatehouse in one readable order: state, identity, keys, the
// services that use them, then the public and admin listeners' plugins.
// Nothing else knows this file; tests and `main.ts` both start here.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AuthService } from './auth/auth-service.js';
import { authRoutes } from './auth/auth-routes.js';
import { tokenEndpoint } from './auth/token-endpoint.js';
import type { Config } from './config/schema.js';
import { errorHandler } from './http/error-handler.js';
import { createIdentityProvider } from './identity/create-identity-provider.js';
import type { IdentityProvider } from './identity/identity-provider.js';
import { healthRoutes } from './observability/health.js';
import { createLogger } from './observability/logger.js';
import { requestId } from './observability/request-id.js';
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
  const auth = new AuthService({
    identity,
    store,
    issuer: new TokenIssuer({ keys, issuer, audience, accessTokenTtlS, refreshTokenTtlS }),
    verifier: new TokenVerifier({ keys, issuer, audience, clockToleranceS }),
    refreshTokenTtlS,
    logger,
  });

  const app = publicListener(config, logger);
  await app.register(errorHandler);
  await app.register(wellKnownRoutes, { keys, tokens: config.tokens });
  await app.register(authRoutes, { auth, bodyLimitBytes: config.server.apiBodyLimitBytes });
  await app.register(tokenEndpoint, { auth, bodyLimitBytes: config.server.apiBodyLimitBytes });

  let admin: FastifyInstance | undefined;
  if (config.admin.enabled) {
    admin = Fastify({ loggerInstance: logger.child({ listener: 'admin' }) as FastifyBaseLogger, disableRequestLogging: true });
    await admin.register(errorHandler);
    await admin.register(healthRoutes, { store });
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
    async listen() {
      const url = await app.listen({ host: config.server.host, port: config.server.port });
      const adminUrl = admin ? await admin.listen({ host: config.admin.host, port: config.admin.port }) : undefined;
      logger.info({ url, adminUrl, store: store.kind }, 'gatehouse listening');
      return { url, adminUrl };
    },
    async close() {
      await Promise.allSettled([app.close(), admin?.close()]);
      keys.close();
      await identity.close();
      if (ownStore) await store.close();
    },
  };
}

function publicListener(config: Config, logger: Logger): FastifyInstance {
  const { trustedProxies, apiBodyLimitBytes } = config.server;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    genReqId: requestId,
    // One access-log line per request (onResponse below) instead of Fastify's two.
    disableRequestLogging: true,
    trustProxy: trustedProxies.length > 0 ? [...trustedProxies] : false,
    bodyLimit: apiBodyLimitBytes,
    return503OnClosing: true,
    // Never coerce types: a numeric password must be refused, not turned into a string.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info({ req: request, res: reply, responseTimeMs: Math.round(reply.elapsedTime * 100) / 100 }, 'request completed');
  });
  return app;
}
