// Named defaults, each with its unit in its name. The schema uses these; the
// README's configuration table lists them.
import { availableParallelism } from 'node:os';

export const DEFAULT_HOST = '0.0.0.0';
export const DEFAULT_PORT = 8080;
export const DEFAULT_ADMIN_HOST = '127.0.0.1';
export const DEFAULT_ADMIN_PORT = 9090;
/** The health-only listener (`server.health.on: own`): every interface, since a load balancer on another host probes it. */
export const DEFAULT_HEALTH_HOST = '0.0.0.0';
export const DEFAULT_HEALTH_PORT = 9091;
/** Body limit of the gateway's own JSON endpoints (login, refresh, token, status). */
export const DEFAULT_API_BODY_LIMIT_BYTES = 16 * 1024;
export const DEFAULT_LOG_LEVEL = 'info';
/** Until a request's head has arrived (every listener). */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** Until a request to the gateway's own endpoints (or the admin listener) has arrived whole, body included. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;
/** Open connections on the public listener, in total and from one client address. */
export const DEFAULT_MAX_CONNECTIONS = 10_000;
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;
/**
 * Lingering close after an answer given before the request body was read:
 * nginx's lingering_time and lingering_timeout, and a cap on the bytes thrown
 * away (the rest of a body a client keeps sending after its 413 or 401).
 */
export const DEFAULT_LINGERING_TIME_MS = 30_000;
export const DEFAULT_LINGERING_TIMEOUT_MS = 5_000;
export const DEFAULT_LINGERING_MAX_BYTES = 8 * 1024 * 1024;
/** Open connections on the admin listener: a flood of the public one must leave it answering. */
export const DEFAULT_ADMIN_MAX_CONNECTIONS = 64;

export const DEFAULT_STORE_KEY_PREFIX = 'gatehouse:';

export const DEFAULT_ISSUER = 'http://localhost:8080';
export const DEFAULT_AUDIENCE = 'gatehouse';
/** The `acr` of a login with one factor (a password or an API key), and of one with two (a password and a one-time code or a passkey). */
export const DEFAULT_ACR_PASSWORD = 'urn:gatehouse:acr:password';
export const DEFAULT_ACR_MFA = 'urn:gatehouse:acr:mfa';
/** Spec 5.4 and 8: the access token is valid for one minute. */
export const DEFAULT_ACCESS_TOKEN_TTL_S = 60;
/** Spec 5.5: the sample login response shows 86400 seconds. */
export const DEFAULT_REFRESH_TOKEN_TTL_S = 86_400;
/** With `identity.usersIn: store`: how often each instance reads the users again whatever it heard (the safety net for a lost announcement). */
export const DEFAULT_USERS_REREAD_S = 15;
/** Chosen by `npm run bench -- tokens`; see the README's token section. */
export const DEFAULT_SIGNING_ALGORITHM = 'EdDSA';
export const DEFAULT_CLOCK_TOLERANCE_S = 5;
export const DEFAULT_TOKEN_CACHE_MAX_ENTRIES = 100_000;
/** RFC 9449 proofs: the asymmetric algorithms accepted by default (never `none`, never HMAC). */
export const DEFAULT_DPOP_ALGORITHMS = ['ES256', 'EdDSA', 'PS256', 'RS256'] as const;
/** How far a DPoP proof's `iat` may be from now, either way; its `jti` is remembered as long. */
export const DEFAULT_DPOP_PROOF_WINDOW_S = 60;
/** How long one DPoP server nonce is handed out (RFC 9449 8); the previous one is accepted as long again. */
export const DEFAULT_DPOP_NONCE_ROTATE_S = 300;

/**
 * One scrypt per core but one: a hash keeps a core busy for its whole run, so
 * as many hashes as cores leave the event loop (every refresh, every proxied
 * request) fighting them for CPU (`npm run bench -- flood`). More at once
 * finish no sooner anyway, and they would hold more of libuv's thread pool
 * (4 threads unless UV_THREADPOOL_SIZE says otherwise), which signing,
 * verification and DNS need too.
 */
export function defaultPasswordHashingConcurrency(): number {
  const threadPool = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  return Math.max(1, Math.min(availableParallelism() - 1, threadPool - 1));
}
/** With ~50 ms a hash, a full queue is a wait of about a second on a 2-core machine. */
export const DEFAULT_PASSWORD_HASHING_MAX_QUEUE = 32;
/** One address's logins beyond these wait nowhere: it gets 429 at once. */
export const DEFAULT_PASSWORD_HASHING_MAX_QUEUE_PER_ADDRESS = 4;
export const DEFAULT_PASSWORD_HASHING_RETRY_AFTER_S = 1;

/**
 * The memory of refused work per address (limits/abuse-guard.ts). 200
 * refusals in 10 s (20 a second, sustained) is far beyond a person mistyping
 * or a client with an expired token (which stops at its first 401 and
 * refreshes), and beyond the login throttle's own per-address count (50
 * failures); a flood reaches it within a second. A held refusal is answered
 * after 1 s, the Retry-After of the hashing queue's own refusals.
 */
export const DEFAULT_ABUSE_SUSPECT_AFTER_STRIKES = 3;
export const DEFAULT_ABUSE_HOLD_AFTER_STRIKES = 20;
export const DEFAULT_ABUSE_REFUSE_AFTER_STRIKES = 200;
export const DEFAULT_ABUSE_STRIKE_WINDOW_MS = 10_000;
export const DEFAULT_ABUSE_REFUSE_FOR_MS = 30_000;
export const DEFAULT_ABUSE_HOLD_MS = 1_000;
export const DEFAULT_ABUSE_MAX_HELD = 4_096;
export const DEFAULT_ABUSE_MAX_ADDRESSES = 65_536;
export const DEFAULT_ABUSE_TRUST_FOR_S = 24 * 3_600;

/**
 * Load shedding on event-loop delay (limits/load-shedder.ts). A cached-token
 * request costs well under a millisecond of loop time: a loop 50 ms late on a
 * tenth of its turns is queueing work, and at 1 s it answers nothing in time.
 */
export const DEFAULT_LOAD_SHEDDING_SAMPLE_INTERVAL_MS = 500;
export const DEFAULT_SHED_UNAUTHENTICATED_AT_DELAY_MS = 50;
export const DEFAULT_SHED_ALL_AT_DELAY_MS = 1_000;
export const DEFAULT_LOAD_SHEDDING_COOL_DOWN_MS = 2_000;
/** A flood keeps the loop busy nearly all the time; a starved process is late but mostly idle. */
export const DEFAULT_LOAD_SHEDDING_MIN_UTILIZATION = 0.8;
export const DEFAULT_LOAD_SHEDDING_RETRY_AFTER_S = 1;

export const DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_UPSTREAM_RESPONSE_TIMEOUT_MS = 30_000;
export const DEFAULT_TARGET_DOWN_MS = 5_000;
export const DEFAULT_MAX_SOCKETS_PER_TARGET = 256;
/** Upstream host names: as long as a typical DNS TTL of a service record, short enough to follow a move. */
export const DEFAULT_DNS_CACHE_TTL_S = 30;
/** A proxied request body must arrive whole within this (Node's own default request timeout). */
export const DEFAULT_REQUEST_DEADLINE_MS = 300_000;
/** A proxied request body must bring at least this many bytes per second, measured over each window. */
export const DEFAULT_MIN_BODY_BYTES_PER_S = 128;
export const DEFAULT_BODY_RATE_WINDOW_MS = 10_000;
/** In-flight upstream requests of one public (auth: none) route, when it names no cap of its own. */
export const DEFAULT_PUBLIC_ROUTE_MAX_UPSTREAM_CONNECTIONS = 64;

export const DEFAULT_SUBJECT_HEADER = 'x-gatehouse-subject';
export const DEFAULT_USERNAME_HEADER = 'x-gatehouse-username';
export const DEFAULT_SESSION_HEADER = 'x-gatehouse-session';
export const DEFAULT_TOKEN_TYPE_HEADER = 'x-gatehouse-token-type';
export const DEFAULT_AUTH_METHOD_HEADER = 'x-gatehouse-auth-method';
export const DEFAULT_KEY_THUMBPRINT_HEADER = 'x-gatehouse-dpop-jkt';
export const DEFAULT_PROVIDER_HEADER = 'x-gatehouse-provider';

/** The signed identity for backends (a route's `identityAssertion`): its header, and its longest life. */
export const DEFAULT_ASSERTION_HEADER = 'x-gatehouse-assertion';
export const MAX_ASSERTION_LIFETIME_S = 60;

export const DEFAULT_REQUEST_ID_FIELD = 'requestId';
export const DEFAULT_ASYNC_MAX_BODY_BYTES = 64 * 1024;
export const DEFAULT_STATUS_POLL_INTERVAL_MS = 1_000;
export const DEFAULT_STATUS_TIMEOUT_MS = 2_000;
/** Longer than the refresh token's default lifetime: a client can always still ask. */
export const DEFAULT_REQUEST_RETENTION_S = 7 * 86_400;
export const DEFAULT_RETRY_AFTER_S = 1;
export const DEFAULT_MAX_WAIT_S = 30;
export const DEFAULT_OUTBOX_MAX_ENTRIES = 10_000;

/** As Kubernetes' default termination grace: requests in flight get this long after a stop signal. */
export const DEFAULT_SHUTDOWN_GRACE_S = 30;
/** Live sessions of one user; a login past it ends the oldest. */
export const DEFAULT_MAX_SESSIONS_PER_USER = 100;
/** What the in-memory store holds at most; past it the oldest entries go (logged, counted). */
export const DEFAULT_MEMORY_MAX_SESSIONS = 1_000_000;
export const DEFAULT_MEMORY_MAX_REQUESTS = 1_000_000;
/** Relative to the config file's folder, as every path in the config. */
export const DEFAULT_JOURNAL_DIR = 'data/journal';
/** About 200,000 records of ~500 bytes: hours of 202s at a busy route's rate. */
export const DEFAULT_JOURNAL_MAX_BYTES = 100 * 1024 * 1024;
/**
 * After an outage, how long an unknown request id answers 503 rather than 404:
 * another instance may still be writing records it accepted meanwhile (its
 * outbox retries at least every second; a deep outbox takes longer to drain).
 */
export const DEFAULT_UNKNOWN_AFTER_OUTAGE_S = 10;
/** Login throttling: see the README's security section for why these values. */
export const DEFAULT_LOGIN_FREE_FAILURES = 5;
export const DEFAULT_LOGIN_FIRST_WAIT_S = 2;
export const DEFAULT_LOGIN_MAX_WAIT_S = 900;
export const DEFAULT_LOGIN_FAILURE_WINDOW_S = 3_600;
export const DEFAULT_LOGIN_FAILURES_PER_ADDRESS = 50;
export const DEFAULT_LOGIN_ADDRESS_BLOCK_S = 900;
export const DEFAULT_LOGIN_FAILURES_PER_USERNAME = 100;

/** The `service.name` of exported spans. */
export const DEFAULT_TRACING_SERVICE_NAME = 'gatehouse';
/** A call to a fronted OpenID Provider slower than this answers 504. */
export const DEFAULT_OIDC_TIMEOUT_MS = 5_000;
/** A refresh token revoked at a fronted provider still admits its bearer for at most this long. */
export const DEFAULT_OIDC_INTROSPECTION_INTERVAL_S = 60;
/** jose's own default: a flood of tokens naming unknown keys costs the provider one key-set fetch per 30 s. */
export const DEFAULT_OIDC_KEY_SET_REFETCH_COOLDOWN_S = 30;

/** The account page (src/account/): ten keys a user, 90 days unless asked otherwise, a year at most, five minutes of "sudo". */
export const DEFAULT_ACCOUNT_MAX_KEYS_PER_USER = 10;
export const DEFAULT_ACCOUNT_KEY_LIFETIME_DAYS = 90;
export const DEFAULT_ACCOUNT_MAX_KEY_LIFETIME_DAYS = 365;
export const DEFAULT_ACCOUNT_RECENT_LOGIN_S = 300;
