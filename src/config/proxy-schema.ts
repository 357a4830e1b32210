// How the proxy forwards, how requests are recorded, and the limits, tracing
// and account settings: their part of the config schema.
import { z } from 'zod';
import type { ContentChecks } from './content-check-hooks.js';
import * as d from './defaults.js';
import { AbuseLimitsSchema, LoadSheddingSchema } from './flood-schema.js';
import { headerName, httpUrl, positiveInt, strongSecret, withoutIssues } from './schema-primitives.js';
import { ProxyUpstreamTlsSchema } from './upstream-schema.js';

/** The records of asynchronous requests (the 202 answers routes capture) and the status API that answers for them. */
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
   * Checked at start: a folder that can be neither written nor created is a
   * config error (exit 78). The embedded config names `../data/journal`, the
   * container's `/var/lib/gatehouse/journal`.
   */
  journalDir: z.string().min(1).default(d.DEFAULT_JOURNAL_DIR),
  /** The most one process's journal holds; past it, records wait in memory only (logged). */
  journalMaxBytes: positiveInt.default(d.DEFAULT_JOURNAL_MAX_BYTES),
  /** After a store outage, unknown request ids answer 503 (not 404) this long: records accepted elsewhere may still arrive. */
  unknownAfterOutageS: positiveInt.default(d.DEFAULT_UNKNOWN_AFTER_OUTAGE_S),
  /**
   * The credential backend services present to the internal status API
   * (`Authorization: Bearer …`); better set from the environment than in the
   * file. Absent: the internal API refuses every call. A placeholder, a
   * repeated pattern or a guessable one is refused: make it with
   * `openssl rand -base64 32`.
   */
  serviceToken: strongSecret.optional(),
  /**
   * The service token being replaced, still accepted while backends move to
   * `serviceToken` one at a time (docs/operations/rotations.md); remove it
   * once every backend presents the new one. Needs `serviceToken`.
   */
  serviceTokenPrevious: strongSecret.optional(),
});

/** How the proxy forwards to the routes' upstreams: the headers backends get, and the upstream connections. */
export function proxySchema(checks: ContentChecks) {
  return z.strictObject({
    /** Headers that tell a backend who the caller is; any client-sent copy is removed. */
    identityHeaders: z
      .strictObject({
        /** The caller's user id (the token's `sub`). */
        subject: headerName.default(d.DEFAULT_SUBJECT_HEADER),
        /** The caller's login name. */
        username: headerName.default(d.DEFAULT_USERNAME_HEADER),
        /** The caller's session id. */
        session: headerName.default(d.DEFAULT_SESSION_HEADER),
        /** `access` (an access token) or `refresh` (a refresh token used as a bearer). */
        tokenType: headerName.default(d.DEFAULT_TOKEN_TYPE_HEADER),
        /** How the session began: `password` or `api_key`. */
        authMethod: headerName.default(d.DEFAULT_AUTH_METHOD_HEADER),
        /**
         * The JWK SHA-256 thumbprint (RFC 7638) of the key a DPoP-bound token
         * is bound to, set only when the request proved possession of it:
         * the request was sender-constrained. Absent for a plain bearer token.
         */
        keyThumbprint: headerName.default(d.DEFAULT_KEY_THUMBPRINT_HEADER),
        /** With several identity providers (`identity.provider: several`): the name of the one the caller's token is of. */
        provider: headerName.default(d.DEFAULT_PROVIDER_HEADER),
        /** The signed identity of routes with `identityAssertion` (a JWT the backend verifies); removed from every client request like the others. */
        assertion: headerName.default(d.DEFAULT_ASSERTION_HEADER),
      })
      .superRefine((names, ctx): void => checks.identityHeaders(names, ctx), { when: withoutIssues })
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
    /** TLS to every route's `https://` upstreams (a route's own `tls` takes precedence). */
    upstreamTls: ProxyUpstreamTlsSchema.prefault({}),
  });
}

/**
 * Password hashing (scrypt) shares libuv's thread pool with DNS and file
 * reads: at most `concurrency` hashes run at once, the rest wait in a queue
 * per client address served round-robin; past the bounds a login is refused
 * at once with Retry-After (429 for a full address queue, 503 for a full total).
 */
export const PasswordHashingSchema = z.strictObject({
  /**
   * Password checks (scrypt) running at once.
   * @default cores − 1, at most UV_THREADPOOL_SIZE − 1; at least 1 (1 on a 2-core machine)
   */
  concurrency: positiveInt.default(d.defaultPasswordHashingConcurrency),
  /** Password checks waiting, all client addresses together; past it a login gets 503 with `Retry-After` at once. */
  maxQueue: z.number().int().min(0).default(d.DEFAULT_PASSWORD_HASHING_MAX_QUEUE),
  /** Password checks waiting from one client address; past it that address gets 429 with `Retry-After` at once. */
  maxQueuePerAddress: z.number().int().min(0).default(d.DEFAULT_PASSWORD_HASHING_MAX_QUEUE_PER_ADDRESS),
  /** The `Retry-After` of those refusals. */
  retryAfterS: positiveInt.default(d.DEFAULT_PASSWORD_HASHING_RETRY_AFTER_S),
});

/** Throttling of failed logins, at the login and token endpoints and of refreshes (src/limits/login-throttle.ts); see docs/operations/security.md. */
export const LoginLimitsSchema = z.strictObject({
  /** Throttle at all. */
  enabled: z.boolean().default(true),
  /** Failures of one username from one address that cost nothing; each one after them makes the pair wait. */
  freeFailures: positiveInt.default(d.DEFAULT_LOGIN_FREE_FAILURES),
  /** The first wait of a username+address pair; each further failure doubles it, up to `maxWaitS`. */
  firstWaitS: positiveInt.default(d.DEFAULT_LOGIN_FIRST_WAIT_S),
  /** The longest wait of a pair, however many failures. */
  maxWaitS: positiveInt.default(d.DEFAULT_LOGIN_MAX_WAIT_S),
  /** How long a failure is remembered, for every count below. */
  failureWindowS: positiveInt.default(d.DEFAULT_LOGIN_FAILURE_WINDOW_S),
  /** Failed logins and refreshes one address may make (any usernames: spraying) before it is blocked for `addressBlockS`. */
  failuresPerAddress: positiveInt.default(d.DEFAULT_LOGIN_FAILURES_PER_ADDRESS),
  /** How long an address past `failuresPerAddress` is blocked. */
  addressBlockS: positiveInt.default(d.DEFAULT_LOGIN_ADDRESS_BLOCK_S),
  /**
   * Failures one username may take from all addresses together (distributed
   * guessing); past it, only addresses without recent failures may try it.
   */
  failuresPerUsername: positiveInt.default(d.DEFAULT_LOGIN_FAILURES_PER_USERNAME),
});

/** Bounds on what users, the in-memory store and password checks may take. */
export const LimitsSchema = z.strictObject({
  /** Live sessions of one user; a login past it ends the oldest session. */
  maxSessionsPerUser: positiveInt.default(d.DEFAULT_MAX_SESSIONS_PER_USER),
  /** Sessions the in-memory store holds at most; past it the oldest go, with a warning (Redis has its own memory policy). */
  memoryMaxSessions: positiveInt.default(d.DEFAULT_MEMORY_MAX_SESSIONS),
  /** Request records the in-memory store holds at most; past it the oldest go, with a warning. */
  memoryMaxRequests: positiveInt.default(d.DEFAULT_MEMORY_MAX_REQUESTS),
  passwordHashing: PasswordHashingSchema.prefault({}),
  login: LoginLimitsSchema.prefault({}),
  abuse: AbuseLimitsSchema.prefault({}),
  loadShedding: LoadSheddingSchema.prefault({}),
});

/**
 * Span export over OTLP/HTTP (OpenTelemetry). Off unless `otlpEndpoint` is
 * set: the SDK is not even loaded then. Trace context (W3C traceparent) is
 * read and passed upstream either way.
 */
export const TracingSchema = z.strictObject({
  /** The collector's traces URL, e.g. http://otel-collector:4318/v1/traces. */
  otlpEndpoint: httpUrl.optional(),
  /** The `service.name` of exported spans. */
  serviceName: z.string().min(1).default(d.DEFAULT_TRACING_SERVICE_NAME),
  /** The share of traces started here that are exported (a continued trace follows its sampled flag). */
  sampleRatio: z.number().min(0).max(1).default(1),
  /** Extra headers for the collector (an API key of a hosted backend). */
  headers: z.record(z.string(), z.string()).default({}),
});

/** The account page and API (src/account/): users manage their own API keys and sessions. */
export const AccountSchema = z
  .strictObject({
    /** The account page (`/account`) and API (`/api/v1/account`); with local identity only. */
    enabled: z.boolean().default(true),
    /** Keys one user may hold at once (those they made themselves and those an operator listed for them). */
    maxKeysPerUser: positiveInt.max(1000).default(d.DEFAULT_ACCOUNT_MAX_KEYS_PER_USER),
    /** The lifetime of a key created without `expiresInDays`; at most `maxKeyLifetimeDays`. */
    defaultKeyLifetimeDays: positiveInt.default(d.DEFAULT_ACCOUNT_KEY_LIFETIME_DAYS),
    /** The longest lifetime a new key may ask for. */
    maxKeyLifetimeDays: positiveInt.max(3650).default(d.DEFAULT_ACCOUNT_MAX_KEY_LIFETIME_DAYS),
    /** Creating a key needs a password login at most this old (GitHub's sudo mode). */
    recentLoginS: positiveInt.default(d.DEFAULT_ACCOUNT_RECENT_LOGIN_S),
  })
  .refine((account) => account.defaultKeyLifetimeDays <= account.maxKeyLifetimeDays, {
    path: ['defaultKeyLifetimeDays'],
    error: 'must not exceed maxKeyLifetimeDays',
  });
export type AccountConfig = z.infer<typeof AccountSchema>;
