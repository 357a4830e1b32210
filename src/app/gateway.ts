// The composition root: builds Gatehouse from a checked config (config-load/
// check.ts, before any file is written or socket opened), one stage at a
// time. A request meets the stages in the order edge (edge.ts), access
// (access.ts), proxy (proxy.ts), asynchronous requests (async-requests.ts),
// identity and tokens (identity-and-tokens.ts), state (state.ts), all watched
// by telemetry.ts; they are built the other way round, each from the parts of
// those below it, and closed in the order a request meets them. The parts a
// reload replaces are held by live-parts.ts. Nothing outside src/app/ builds
// another stage's parts; `main.ts` (through cli/start.ts) and tests start here.
// Why: docs/decisions/0022-one-composition-root.md
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AuditTrail } from '../audit/open-trail.js';
import type { Authentication } from '../auth/auth-service.js';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import type { Config } from '../config/schema.js';
import { Drain } from '../http/drain.js';
import type { AbuseGuard } from '../limits/abuse-guard.js';
import type { FairWorkQueue } from '../limits/fair-work-queue.js';
import type { LoadShedder } from '../limits/load-shedder.js';
import type { Metrics } from '../observability/metrics.js';
import type { ForwardingEngine } from '../proxy/engine.js';
import type { RequestTracker } from '../async-requests/request-tracker.js';
import type { Store } from '../store/store.js';
import type { KeySet } from '../tokens/keyset.js';
import type { IdentityProvider } from '../users/identity-provider.js';
import type { PasswordVerifier } from '../users/password-check-options.js';
import { openAccess } from './access.js';
import { openAsyncRequests } from './async-requests.js';
import { openEdge, type ListenerUrls } from './edge.js';
import { openIdentityAndTokens } from './identity-and-tokens.js';
import { LiveParts } from './live-parts.js';
import { openProxy } from './proxy.js';
import { openState } from './state.js';
import { openTelemetry } from './telemetry.js';

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
  /** The deployment's audit trail: where every change of who may do what is recorded. */
  readonly audit: AuditTrail;
  /** Re-reads the config file and puts its live sections in force (routes, authorization, cors); a bad or restart-needing edit changes nothing. */
  reloadRoutes(): Promise<boolean>;
  /** Starts the listeners; resolves with the addresses they bound (`healthUrl`: `server.health.on: own`). */
  listen(): Promise<ListenerUrls>;
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
  const telemetry = await openTelemetry(config, options.logger);
  const { logger, metrics } = telemetry;
  const state = await openState(config, logger, metrics, options.store);
  const access = openAccess(config, metrics, state, logger);
  const live = new LiveParts(config);
  const identity = await openIdentityAndTokens({
    config,
    logger,
    metrics,
    state,
    access,
    live,
    readOnlyKeys: options.readOnlyKeys ?? false,
    verifyPassword: options.verifyPassword,
    exportAudit: telemetry.exportAudit,
  });
  const { mode } = identity;
  const asyncRequests = await openAsyncRequests(config, state.store, metrics, logger, live);
  // One drain: the proxy asks it whether to keep connections, the edge runs it.
  const drain = new Drain();
  const proxy = openProxy({
    config,
    logger,
    metrics,
    telemetry: telemetry.telemetry,
    access,
    identity: mode.identity,
    bearer: mode.bearer,
    acrRanks: mode.acrRanks,
    keys: identity.keys,
    asyncRequests,
    live,
    drain,
    engine: options.engine,
  });
  const edge = await openEdge({
    config,
    logger,
    metrics,
    telemetry: telemetry.telemetry,
    store: state.store,
    access,
    identity,
    asyncRequests,
    proxy,
    live,
    drain,
  });
  live.watch(options.configFile, config, logger, identity.audit.appender);

  return {
    config,
    logger,
    app: edge.app,
    admin: edge.admin,
    store: state.store,
    identity: mode.identity,
    keys: identity.keys,
    auth: mode.auth,
    bearer: mode.bearer,
    metrics,
    passwordHashing: access.passwordHashing,
    abuse: access.abuse,
    load: access.load,
    requests: asyncRequests.requests,
    audit: identity.audit,
    async reloadRoutes() {
      return live.reload();
    },
    listen: () => edge.listen(),
    async close({ graceMs = config.server.shutdownGraceS * 1000 } = {}) {
      // Readiness turns 503 in this same tick: the drain starts before the first await.
      const cut = edge.drain(graceMs);
      live.close();
      // Tunnels and long polls end now instead of holding the listeners open.
      proxy.endTunnels();
      asyncRequests.endWatches();
      const cutCount = await cut;
      await edge.close();
      proxy.close();
      // Before the store closes: the outbox gets its last chance to be written.
      await asyncRequests.close();
      await identity.close();
      access.close();
      await state.close();
      await telemetry.close();
      return cutCount;
    },
  };
}
