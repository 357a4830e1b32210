// Named defaults, each with its unit in its name. The schema uses these; the
// README's configuration table lists them.

export const DEFAULT_HOST = '0.0.0.0';
export const DEFAULT_PORT = 8080;
export const DEFAULT_ADMIN_HOST = '127.0.0.1';
export const DEFAULT_ADMIN_PORT = 9090;
/** Body limit of the gateway's own JSON endpoints (login, refresh, token, status). */
export const DEFAULT_API_BODY_LIMIT_BYTES = 16 * 1024;
export const DEFAULT_LOG_LEVEL = 'info';

export const DEFAULT_STORE_KEY_PREFIX = 'gatehouse:';

export const DEFAULT_ISSUER = 'http://localhost:8080';
export const DEFAULT_AUDIENCE = 'gatehouse';
/** Spec 5.4 and 8: the access token is valid for one minute. */
export const DEFAULT_ACCESS_TOKEN_TTL_S = 60;
/** Spec 5.5: the sample login response shows 86400 seconds. */
export const DEFAULT_REFRESH_TOKEN_TTL_S = 86_400;
/** Chosen by `npm run bench -- tokens`; see the README's token section. */
export const DEFAULT_SIGNING_ALGORITHM = 'EdDSA';
export const DEFAULT_CLOCK_TOLERANCE_S = 5;
export const DEFAULT_TOKEN_CACHE_MAX_ENTRIES = 100_000;

export const DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_UPSTREAM_RESPONSE_TIMEOUT_MS = 30_000;
export const DEFAULT_TARGET_DOWN_MS = 5_000;
export const DEFAULT_MAX_SOCKETS_PER_TARGET = 256;

export const DEFAULT_SUBJECT_HEADER = 'x-gatehouse-subject';
export const DEFAULT_USERNAME_HEADER = 'x-gatehouse-username';
export const DEFAULT_SESSION_HEADER = 'x-gatehouse-session';
export const DEFAULT_TOKEN_TYPE_HEADER = 'x-gatehouse-token-type';
export const DEFAULT_AUTH_METHOD_HEADER = 'x-gatehouse-auth-method';

export const DEFAULT_REQUEST_ID_FIELD = 'requestId';
export const DEFAULT_ASYNC_MAX_BODY_BYTES = 64 * 1024;
export const DEFAULT_STATUS_POLL_INTERVAL_MS = 1_000;
export const DEFAULT_STATUS_TIMEOUT_MS = 2_000;
/** Longer than the refresh token's default lifetime: a client can always still ask. */
export const DEFAULT_REQUEST_RETENTION_S = 7 * 86_400;
export const DEFAULT_RETRY_AFTER_S = 1;
export const DEFAULT_MAX_WAIT_S = 30;
export const DEFAULT_OUTBOX_MAX_ENTRIES = 10_000;

/** Login throttling: see the README's security section for why these values. */
export const DEFAULT_LOGIN_FREE_FAILURES = 5;
export const DEFAULT_LOGIN_FIRST_WAIT_S = 2;
export const DEFAULT_LOGIN_MAX_WAIT_S = 900;
export const DEFAULT_LOGIN_FAILURE_WINDOW_S = 3_600;
export const DEFAULT_LOGIN_FAILURES_PER_ADDRESS = 50;
export const DEFAULT_LOGIN_ADDRESS_BLOCK_S = 900;
export const DEFAULT_LOGIN_FAILURES_PER_USERNAME = 100;
