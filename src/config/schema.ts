// The one schema of Gatehouse's configuration. The TypeScript types below are
// inferred from it, so the code and the validation can never disagree.
// Every object is strict: a misspelt key is an error, not a silently ignored line.
// What types cannot say (routes that clash, addresses the proxy cannot read)
// is checked by refinements from content-checks.ts, with field paths too.
import { z } from 'zod';
import { RoleNameSchema } from '../core/role-name.js';
import { isWellFormedPasswordHash } from '../core/password-hash-format.js';
import { always, checkIdentityHeaders, checkRouteRules, checkRoutes, checkStoreUrl, checkTrustedProxy, withoutIssues } from '../config-load/content-checks.js';
import * as d from './defaults.js';

const port = z.number().int().min(0).max(65_535);
const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();
const host = z.string().min(1);

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

const storeUrl = z
  .string()
  .regex(/^(redis|rediss|redis-sentinel|redis-cluster):\/\/.+/, {
    error: 'must be a redis://, rediss://, redis-sentinel:// or redis-cluster:// URL',
  })
  .superRefine((url, ctx): void => checkStoreUrl(url, ctx), { when: withoutIssues });

export const ServerSchema = z.strictObject({
  host: host.default(d.DEFAULT_HOST),
  port: port.default(d.DEFAULT_PORT),
  /** Body limit of the gateway's own JSON endpoints; proxied routes have their own. */
  apiBodyLimitBytes: positiveInt.default(d.DEFAULT_API_BODY_LIMIT_BYTES),
  /** Addresses or CIDRs whose `X-Forwarded-*` headers are believed. */
  trustedProxies: z.array(z.string().min(1).superRefine((entry, ctx): void => checkTrustedProxy(entry, ctx), { when: withoutIssues })).default([]),
  /**
   * Worker processes sharing the listeners (node:cluster): a number, or
   * `auto` for one per CPU. More than one needs a shared store (Redis).
   */
  workers: z.union([z.number().int().min(1).max(256), z.literal('auto')]).default(1),
  /**
   * After SIGTERM/SIGINT, how long requests in flight may take to finish
   * before they are cut (Kubernetes' terminationGracePeriodSeconds by default).
   */
  shutdownGraceS: z.number().int().min(0).max(3600).default(d.DEFAULT_SHUTDOWN_GRACE_S),
  /** Until a request's head has arrived, on both listeners. */
  headersTimeoutMs: positiveInt.default(d.DEFAULT_HEADERS_TIMEOUT_MS),
  /**
   * Until a request to the gateway's own endpoints (login, refresh, token,
   * status; every admin request) has arrived whole. Proxied requests have
   * their route's `requestDeadlineMs` instead.
   */
  requestTimeoutMs: positiveInt.default(d.DEFAULT_REQUEST_TIMEOUT_MS),
  /** Open connections on the public listener; past it a new one is closed at once. */
  maxConnections: positiveInt.default(d.DEFAULT_MAX_CONNECTIONS),
  /** Open connections from one client address (trusted proxies are not counted). */
  maxConnectionsPerAddress: positiveInt.default(d.DEFAULT_MAX_CONNECTIONS_PER_ADDRESS),
});

export const AdminSchema = z.strictObject({
  enabled: z.boolean().default(true),
  host: host.default(d.DEFAULT_ADMIN_HOST),
  port: port.default(d.DEFAULT_ADMIN_PORT),
  /** Open connections on the admin listener, its own cap: a flood of the public one never reaches it. */
  maxConnections: positiveInt.default(d.DEFAULT_ADMIN_MAX_CONNECTIONS),
});

export const StoreSchema = z.strictObject({
  /** Absent: the in-memory store (neither durable nor shared between instances). */
  url: storeUrl.optional(),
  keyPrefix: z.string().default(d.DEFAULT_STORE_KEY_PREFIX),
});

const LocalIdentitySchema = z.strictObject({
  provider: z.literal('local'),
  /** The YAML users file that `gatehouse users …` and `gatehouse apikeys …` manage. */
  usersFile: z.string().min(1),
  /** Pick up edits of the users file without a restart. */
  watch: z.boolean().default(true),
});

/**
 * An OpenID Provider that Gatehouse fronts (`identity.provider: oidc`): login
 * and refresh go to its token endpoint, bearer tokens are checked against its
 * keys (access tokens) or its introspection (refresh tokens, spec 5.9).
 */
export const OidcIdentitySchema = z.strictObject({
  provider: z.literal('oidc'),
  /** Discovery is read from `<issuer>/.well-known/openid-configuration`. */
  issuer: httpUrl,
  clientId: z.string().min(1),
  /** How Gatehouse authenticates at the token endpoint (RFC 6749 2.3, OIDC Core 9). */
  clientAuth: z.enum(['client_secret_basic', 'client_secret_post', 'private_key_jwt']).default('client_secret_basic'),
  /** For client_secret_basic and client_secret_post (env GATEHOUSE_OIDC_CLIENT_SECRET). */
  clientSecret: z.string().min(1).optional(),
  /** For private_key_jwt: the client's private key, a PKCS#8 PEM file (its public key registered at the provider). */
  privateKeyFile: z.string().min(1).optional(),
  privateKeyAlgorithm: z.enum(['RS256', 'ES256', 'EdDSA']).default('RS256'),
  /** The `kid` the provider knows the key by, when it needs one to pick the key. */
  privateKeyId: z.string().min(1).optional(),
  scopes: z.array(z.string().min(1)).default(['openid']),
  /** The audience (resource indicator) access tokens must carry. */
  audience: z.string().min(1).optional(),
  /** Which claims carry the login name, the roles and the groups. */
  claims: z.strictObject({
    username: z.string().min(1).default('preferred_username'),
    roles: z.string().min(1).default('roles'),
    groups: z.string().min(1).default('groups'),
    /**
     * The provider's session id (Keycloak's `sid`, in every token of a login):
     * a logout at the gateway ends every token naming it. A token without it
     * is its own session.
     */
    session: z.string().min(1).default('sid'),
  }).prefault({}),
  /** `refresh_expires_in` to answer when the provider leaves it out (its refresh-token lifetime, in seconds). */
  refreshTokenTtlS: positiveInt.default(d.DEFAULT_REFRESH_TOKEN_TTL_S),
  /** A refresh token used as a bearer is introspected at the provider at most once per this many seconds, across all instances. */
  introspectionIntervalS: positiveInt.default(d.DEFAULT_OIDC_INTROSPECTION_INTERVAL_S),
  /** Bound of the introspection answers kept in memory when the store is in memory (Redis bounds them by their expiry). */
  introspectionCacheMaxEntries: positiveInt.default(d.DEFAULT_TOKEN_CACHE_MAX_ENTRIES),
  /** How long one call to the provider may take before login answers 504. */
  timeoutMs: positiveInt.default(d.DEFAULT_OIDC_TIMEOUT_MS),
  /**
   * A token signed with a key the gateway does not hold makes it fetch the
   * provider's key set again (a rotation), at most once per this many seconds
   * however many such tokens arrive.
   */
  keySetRefetchCooldownS: nonNegativeInt.default(d.DEFAULT_OIDC_KEY_SET_REFETCH_COOLDOWN_S),
});
export type OidcIdentityConfig = z.infer<typeof OidcIdentitySchema>;

export const IdentitySchema = z.discriminatedUnion('provider', [LocalIdentitySchema, OidcIdentitySchema]);

export const SIGNING_ALGORITHMS = ['EdDSA', 'ES256', 'RS256'] as const;

export const TokensSchema = z.strictObject({
  issuer: httpUrl.default(d.DEFAULT_ISSUER),
  audience: z.string().min(1).default(d.DEFAULT_AUDIENCE),
  accessTokenTtlS: positiveInt.default(d.DEFAULT_ACCESS_TOKEN_TTL_S),
  refreshTokenTtlS: positiveInt.default(d.DEFAULT_REFRESH_TOKEN_TTL_S),
  algorithm: z.enum(SIGNING_ALGORITHMS).default(d.DEFAULT_SIGNING_ALGORITHM),
  /** The private key set (JWKS) file; created with a fresh key on first start. */
  keysFile: z.string().min(1),
  clockToleranceS: z.number().int().min(0).max(300).default(d.DEFAULT_CLOCK_TOLERANCE_S),
  /** Size of the verified-token cache on the proxy's hot path. */
  cacheMaxEntries: positiveInt.default(d.DEFAULT_TOKEN_CACHE_MAX_ENTRIES),
  /**
   * Confidential clients (resource servers, relying parties) that may call
   * introspection (RFC 7662) and revocation (RFC 7009); each secret is kept
   * as a scrypt hash, as `gatehouse users` writes passwords.
   */
  clients: z.array(z.strictObject({
    id: z.string().min(1).max(200),
    secretHash: z.string().refine(isWellFormedPasswordHash, { error: 'must be a scrypt hash as `gatehouse users` writes them' }),
  })).default([]),
});

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** A route's request limit: `points` requests per `durationS`, per client address (public) or per subject. */
export const RateLimitSchema = z.strictObject({
  points: positiveInt,
  durationS: positiveInt,
});

/**
 * Who may use a route (or one method of it): any of `anyRole`, all of
 * `allRoles`, and every one of `scopes`. Each list that is given must be met.
 */
export const AccessRuleSchema = z
  .strictObject({
    anyRole: z.array(RoleNameSchema).min(1).optional(),
    allRoles: z.array(RoleNameSchema).min(1).optional(),
    scopes: z.array(RoleNameSchema).min(1).optional(),
  })
  .refine((rule) => rule.anyRole !== undefined || rule.allRoles !== undefined || rule.scopes !== undefined, {
    error: 'names none of anyRole, allRoles, scopes',
  });

/** A route's rule, and rules of their own for some methods (which replace it for them). */
export const AuthorizeSchema = z.strictObject({
  anyRole: z.array(RoleNameSchema).min(1).optional(),
  allRoles: z.array(RoleNameSchema).min(1).optional(),
  scopes: z.array(RoleNameSchema).min(1).optional(),
  methods: z.partialRecord(z.enum(HTTP_METHODS), AccessRuleSchema).optional(),
});

/**
 * Cross-origin access for browser applications (the Fetch standard's CORS
 * protocol): which origins may call, with which methods and headers, and
 * which response headers their scripts may read. Exact origins, or a pattern
 * with one `*` for a subdomain label (`https://*.example.com`).
 */
export const CorsSchema = z.strictObject({
  allowedOrigins: z
    .array(z.string().regex(/^https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$/, { error: 'must be an origin (scheme://host[:port]), optionally https://*.example.com' }))
    .min(1),
  allowedMethods: z.array(z.enum(HTTP_METHODS)).min(1).default(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']),
  allowedHeaders: z.array(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/)).default(['authorization', 'content-type', 'x-request-id']),
  exposedHeaders: z.array(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/)).default(['location', 'retry-after', 'x-request-id']),
  allowCredentials: z.boolean().default(false),
  maxAgeS: z.number().int().min(0).max(86_400).default(600),
});

/** The roles and scopes route rules may name: a rule naming another one is a typo, refused at load. */
export const AuthorizationSchema = z.strictObject({
  roles: z.array(RoleNameSchema).default([]),
  scopes: z.array(RoleNameSchema).default([]),
});

export const RouteSchema = z.strictObject({
  name: z.string().min(1).optional(),
  /** Matched on whole path segments: `/a/b` matches `/a/b` and `/a/b/c`, not `/a/bc`. */
  prefix: z.string().regex(/^\/[^?#]*$/, { error: 'must be a path starting with / and holding no ? or #' }),
  methods: z.array(z.enum(HTTP_METHODS)).min(1).optional(),
  host: z.string().min(1).optional(),
  upstreams: z.array(httpUrl).min(1),
  /** Replaces the matched prefix before forwarding (e.g. `/api/v1/orders` → `/orders`). */
  rewritePrefix: z.string().regex(/^\/[^?#]*$/).optional(),
  auth: z.enum(['required', 'none']).default('required'),
  forwardAuthorization: z.boolean().default(false),
  allowEncodedSlashes: z.boolean().default(false),
  /**
   * Refuse paths a backend could read as another path: `;` parameters,
   * double encoding, escapes that are not UTF-8, segments ending in `.` or a
   * space. Off only for a backend that needs such paths; even then a path
   * that some server would read as another route is refused.
   */
  strictPaths: z.boolean().default(true),
  connectTimeoutMs: positiveInt.default(d.DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS),
  responseTimeoutMs: positiveInt.default(d.DEFAULT_UPSTREAM_RESPONSE_TIMEOUT_MS),
  /** Absent: no limit (bodies stream through; nothing is buffered). */
  bodyLimitBytes: positiveInt.optional(),
  /** The whole request body must arrive within this, from the request's start. */
  requestDeadlineMs: positiveInt.default(d.DEFAULT_REQUEST_DEADLINE_MS),
  /** The body must bring at least this many bytes a second over each `bodyRateWindowMs`; 0: no minimum. */
  minBodyBytesPerS: z.number().int().min(0).default(d.DEFAULT_MIN_BODY_BYTES_PER_S),
  bodyRateWindowMs: positiveInt.default(d.DEFAULT_BODY_RATE_WINDOW_MS),
  /**
   * In-flight upstream requests this route may hold of its targets' shared
   * connections; past it, 503 with Retry-After. Absent: a public route gets
   * `proxy.publicRouteMaxUpstreamConnections`, an authenticated one the whole pool.
   */
  maxUpstreamConnections: positiveInt.optional(),
  /** Absent: no limit, and the route's requests cost nothing extra. Shared by every instance through the store. */
  rateLimit: RateLimitSchema.optional(),
  /** Browser applications on other origins that may call this route. */
  cors: CorsSchema.optional(),
  /** Roles or scopes a caller needs (403 otherwise); only on routes with `auth: required`. */
  authorize: AuthorizeSchema.optional(),
  /** Close a proxied WebSocket when the token that opened it expires. */
  closeWebSocketOnExpiry: z.boolean().default(true),
  /** What to do with this route's 202 answers (spec 4.4). */
  async: z
    .strictObject({
      /** Record 202 answers that hold a request id. */
      capture: z.boolean().default(true),
      /** The JSON field of the 202 body that holds the request id. */
      requestIdField: z.string().min(1).default(d.DEFAULT_REQUEST_ID_FIELD),
      /** Larger 202 bodies pass through untouched and unrecorded. */
      maxBodyBytes: positiveInt.default(d.DEFAULT_ASYNC_MAX_BODY_BYTES),
      /** Add `Location` (the status URL) and `Retry-After` when the upstream did not. */
      addHeaders: z.boolean().default(true),
      /**
       * The upstream's own status URL, `{requestId}` standing for the id, e.g.
       * `http://orders:8080/jobs/{requestId}`: pending records are reconciled
       * with it when clients poll.
       */
      statusUrlTemplate: z
        .string()
        .regex(/^https?:\/\/[^\s]*\{requestId\}[^\s]*$/, { error: 'must be an http(s) URL holding {requestId}' })
        .optional(),
      /** How often at most the upstream is asked about one request. */
      statusPollIntervalMs: positiveInt.default(d.DEFAULT_STATUS_POLL_INTERVAL_MS),
      statusTimeoutMs: positiveInt.default(d.DEFAULT_STATUS_TIMEOUT_MS),
    })
    .prefault({}),
});

export const RequestsSchema = z.strictObject({
  /** How long a request record is kept, pending or terminal (from its last change). */
  retentionS: positiveInt.default(d.DEFAULT_REQUEST_RETENTION_S),
  /** `Retry-After` seconds on 202 answers and on pending statuses. */
  retryAfterS: positiveInt.default(d.DEFAULT_RETRY_AFTER_S),
  /** The longest `?wait=` a status poll may ask for. */
  maxWaitS: z.number().int().min(0).max(300).default(d.DEFAULT_MAX_WAIT_S),
  /** Records waiting for the store while it is down, in memory; past this they are dropped (logged, counted). */
  outboxMaxEntries: positiveInt.default(d.DEFAULT_OUTBOX_MAX_ENTRIES),
  /**
   * Where records the store could not take are journaled (fsynced) before
   * their 202 goes out, until the store has them; relative to the config
   * file's folder. Used only with Redis: the in-memory store never refuses.
   */
  journalDir: z.string().min(1).default(d.DEFAULT_JOURNAL_DIR),
  /** The most one process's journal holds; past it, records wait in memory only (logged). */
  journalMaxBytes: positiveInt.default(d.DEFAULT_JOURNAL_MAX_BYTES),
  /** After a store outage, unknown request ids answer 503 (not 404) this long: records accepted elsewhere may still arrive. */
  unknownAfterOutageS: positiveInt.default(d.DEFAULT_UNKNOWN_AFTER_OUTAGE_S),
  /**
   * The credential backend services present to the internal status API
   * (`Authorization: Bearer …`); set it with GATEHOUSE_SERVICE_TOKEN. Absent:
   * the internal API refuses every call.
   */
  serviceToken: z.string().min(32, { error: 'must be at least 32 characters' }).optional(),
});

const headerName = z.string().regex(/^[A-Za-z0-9-]+$/, { error: 'must be an HTTP header name (letters, digits, -)' });

export const ProxySchema = z.strictObject({
  /** Headers that tell a backend who the caller is; any client-sent copy is removed. */
  identityHeaders: z
    .strictObject({
      subject: headerName.default(d.DEFAULT_SUBJECT_HEADER),
      username: headerName.default(d.DEFAULT_USERNAME_HEADER),
      session: headerName.default(d.DEFAULT_SESSION_HEADER),
      tokenType: headerName.default(d.DEFAULT_TOKEN_TYPE_HEADER),
      authMethod: headerName.default(d.DEFAULT_AUTH_METHOD_HEADER),
    })
    .superRefine((names, ctx): void => checkIdentityHeaders(names, ctx), { when: withoutIssues })
    .prefault({}),
  /**
   * Client headers that backends may receive although the gateway removes
   * their kind: client addresses (True-Client-IP, CF-Connecting-IP, …), URL
   * and method overrides (X-Original-URL, X-HTTP-Method-Override, …) and
   * `x-gatehouse-*` headers it does not set. Name one only when something in
   * front of the gateway sets it and the backend needs it.
   */
  allowClientHeaders: z.array(headerName).default([]),
  /** How long a target that refused connections is skipped before it is tried again. */
  targetDownMs: positiveInt.default(d.DEFAULT_TARGET_DOWN_MS),
  /**
   * How long an upstream host name's addresses are used before they are
   * looked up again (in the background: the old answer serves meanwhile, and
   * stays when a lookup fails). Lookups share libuv's thread pool with
   * password hashing; cached ones wait for nothing.
   */
  dnsCacheTtlS: positiveInt.default(d.DEFAULT_DNS_CACHE_TTL_S),
  /** Keep-alive sockets per upstream target. */
  maxSocketsPerTarget: positiveInt.default(d.DEFAULT_MAX_SOCKETS_PER_TARGET),
  /** The in-flight cap of a public route that names none: unauthenticated traffic never takes a whole pool. */
  publicRouteMaxUpstreamConnections: positiveInt.default(d.DEFAULT_PUBLIC_ROUTE_MAX_UPSTREAM_CONNECTIONS),
});

/**
 * Password hashing (scrypt) shares libuv's thread pool with DNS and file
 * reads: at most `concurrency` hashes run at once, the rest wait in a queue
 * per client address served round-robin; past the bounds a login is refused
 * at once with Retry-After (429 for a full address queue, 503 for a full total).
 */
export const PasswordHashingSchema = z.strictObject({
  concurrency: positiveInt.default(d.defaultPasswordHashingConcurrency),
  maxQueue: z.number().int().min(0).default(d.DEFAULT_PASSWORD_HASHING_MAX_QUEUE),
  maxQueuePerAddress: z.number().int().min(0).default(d.DEFAULT_PASSWORD_HASHING_MAX_QUEUE_PER_ADDRESS),
  retryAfterS: positiveInt.default(d.DEFAULT_PASSWORD_HASHING_RETRY_AFTER_S),
});

/** Login throttling (src/limits/login-throttle.ts); see the README's security section. */
export const LoginLimitsSchema = z.strictObject({
  enabled: z.boolean().default(true),
  /** Failures of one username from one address that cost nothing; each one after them makes the pair wait. */
  freeFailures: positiveInt.default(d.DEFAULT_LOGIN_FREE_FAILURES),
  /** The first wait of a username+address pair; each further failure doubles it, up to `maxWaitS`. */
  firstWaitS: positiveInt.default(d.DEFAULT_LOGIN_FIRST_WAIT_S),
  maxWaitS: positiveInt.default(d.DEFAULT_LOGIN_MAX_WAIT_S),
  /** How long a failure is remembered, for every count below. */
  failureWindowS: positiveInt.default(d.DEFAULT_LOGIN_FAILURE_WINDOW_S),
  /** Failed logins and refreshes one address may make (any usernames: spraying) before it is blocked for `addressBlockS`. */
  failuresPerAddress: positiveInt.default(d.DEFAULT_LOGIN_FAILURES_PER_ADDRESS),
  addressBlockS: positiveInt.default(d.DEFAULT_LOGIN_ADDRESS_BLOCK_S),
  /**
   * Failures one username may take from all addresses together (distributed
   * guessing); past it, only addresses without recent failures may try it.
   */
  failuresPerUsername: positiveInt.default(d.DEFAULT_LOGIN_FAILURES_PER_USERNAME),
});

export const LimitsSchema = z.strictObject({
  /** Live sessions of one user; a login past it ends the oldest session. */
  maxSessionsPerUser: positiveInt.default(d.DEFAULT_MAX_SESSIONS_PER_USER),
  /** The in-memory store's bounds (Redis has its own memory policy). */
  memoryMaxSessions: positiveInt.default(d.DEFAULT_MEMORY_MAX_SESSIONS),
  memoryMaxRequests: positiveInt.default(d.DEFAULT_MEMORY_MAX_REQUESTS),
  passwordHashing: PasswordHashingSchema.prefault({}),
  login: LoginLimitsSchema.prefault({}),
});

/**
 * Span export over OTLP/HTTP (OpenTelemetry). Off unless `otlpEndpoint` is
 * set: the SDK is not even loaded then. Trace context (W3C traceparent) is
 * read and passed upstream either way.
 */
export const TracingSchema = z.strictObject({
  /** The collector's traces URL, e.g. http://otel-collector:4318/v1/traces. */
  otlpEndpoint: httpUrl.optional(),
  serviceName: z.string().min(1).default(d.DEFAULT_TRACING_SERVICE_NAME),
  /** The share of traces started here that are exported (a continued trace follows its sampled flag). */
  sampleRatio: z.number().min(0).max(1).default(1),
  /** Extra headers for the collector (an API key of a hosted backend). */
  headers: z.record(z.string(), z.string()).default({}),
});

/** The account page and API (src/account/): users manage their own API keys and sessions. */
export const AccountSchema = z.strictObject({
  enabled: z.boolean().default(true),
  /** Keys one user may hold at once (those they made themselves and those an operator listed for them). */
  maxKeysPerUser: positiveInt.max(1000).default(d.DEFAULT_ACCOUNT_MAX_KEYS_PER_USER),
  /** The lifetime of a key created without `expiresInDays`, and the longest one may ask for. */
  defaultKeyLifetimeDays: positiveInt.default(d.DEFAULT_ACCOUNT_KEY_LIFETIME_DAYS),
  maxKeyLifetimeDays: positiveInt.max(3650).default(d.DEFAULT_ACCOUNT_MAX_KEY_LIFETIME_DAYS),
  /** Creating a key needs a password login at most this old (GitHub's sudo mode). */
  recentLoginS: positiveInt.default(d.DEFAULT_ACCOUNT_RECENT_LOGIN_S),
}).refine((account) => account.defaultKeyLifetimeDays <= account.maxKeyLifetimeDays, { path: ['defaultKeyLifetimeDays'], error: 'must not exceed maxKeyLifetimeDays' });
export type AccountConfig = z.infer<typeof AccountSchema>;

export const ConfigSchema = z
  .strictObject({
  server: ServerSchema.prefault({}),
  admin: AdminSchema.prefault({}),
  log: z
    .strictObject({
      level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      /** One line per request at info. Off where a load balancer in front already keeps access logs: it is a measurable share of each request's CPU. */
      access: z.boolean().default(true),
    })
    .prefault({}),
  store: StoreSchema.prefault({}),
  identity: IdentitySchema,
  tokens: TokensSchema,
  proxy: ProxySchema.prefault({}),
  requests: RequestsSchema.prefault({}),
  limits: LimitsSchema.prefault({}),
  tracing: TracingSchema.prefault({}),
  authorization: AuthorizationSchema.prefault({}),
  /** Browser applications on other origins that may call the gateway's own endpoints (login, refresh, token, status). */
  cors: CorsSchema.optional(),
  account: AccountSchema.prefault({}),
  routes: z.array(RouteSchema).superRefine((routes, ctx): void => checkRoutes(routes, ctx), { when: always }).default([]),
  })
  .check((ctx) => checkRouteRules(ctx.value.routes, ctx.value.authorization, ctx.issues))
  .check((ctx) => {
    // Each way of authenticating at the provider needs its own credential, and only it.
    const identity = ctx.value.identity;
    if (identity.provider !== 'oidc') return;
    const needsKey = identity.clientAuth === 'private_key_jwt';
    if (needsKey && identity.privateKeyFile === undefined) {
      ctx.issues.push({ code: 'custom', path: ['identity', 'privateKeyFile'], message: 'private_key_jwt needs the client\'s private key file', input: undefined });
    }
    if (!needsKey && identity.clientSecret === undefined) {
      ctx.issues.push({ code: 'custom', path: ['identity', 'clientSecret'], message: `${identity.clientAuth} needs the client secret (or env GATEHOUSE_OIDC_CLIENT_SECRET)`, input: undefined });
    }
  })
  .check((ctx) => {
    // Workers do not share memory: sessions and statuses must live in Redis.
    if (ctx.value.server.workers !== 1 && !ctx.value.store.url) {
      ctx.issues.push({ code: 'custom', path: ['server', 'workers'], message: 'more than one worker needs store.url (Redis): workers share no memory', input: ctx.value.server.workers });
    }
    // The head is part of the request: Node refuses a head deadline past the whole one.
    const { headersTimeoutMs, requestTimeoutMs } = ctx.value.server;
    if (headersTimeoutMs > requestTimeoutMs) {
      ctx.issues.push({ code: 'custom', path: ['server', 'headersTimeoutMs'], message: `must be at most server.requestTimeoutMs (${requestTimeoutMs})`, input: headersTimeoutMs });
    }
  });

export type Config = z.infer<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;
export type ServerConfig = Config['server'];
export type AdminConfig = Config['admin'];
export type StoreConfig = Config['store'];
export type IdentityConfig = Config['identity'];
export type TokensConfig = Config['tokens'];
export type CorsConfig = z.infer<typeof CorsSchema>;
export type RouteConfig = Config['routes'][number];
export type ProxyConfig = Config['proxy'];
export type RequestsConfig = Config['requests'];
export type LimitsConfig = Config['limits'];
export type PasswordHashingConfig = Config['limits']['passwordHashing'];
export type LoginLimitsConfig = Config['limits']['login'];
export type RateLimitConfig = z.infer<typeof RateLimitSchema>;
export type RouteAsyncConfig = RouteConfig['async'];
export type IdentityHeaderNames = ProxyConfig['identityHeaders'];
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];
