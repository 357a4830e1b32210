// The paths the gateway answers itself, the one list of them: the route
// modules register with these constants. On the public listener they are
// Fastify routes and everything else is the proxy's: the listener sends what
// lies under GATEWAY_PATH_PREFIXES and GATEWAY_PATH_ROOTS to Fastify, and a
// proxy route may not claim them (they would be shadowed silently).
// test/http/gateway-paths.test.ts holds the routes a running gateway
// registers, and the HTTP API reference, to this list.

/** Spec 4.1 and 4.2, plus logout (auth/auth-routes.ts). */
export const LOGIN_PATH = '/api/v1/auth/login';
export const REFRESH_PATH = '/api/v1/auth/refresh';
export const LOGOUT_PATH = '/api/v1/auth/logout';

/** The standard OAuth 2.0 endpoints, local mode only (auth/token-endpoint.ts). */
export const TOKEN_ENDPOINT_PATH = '/oauth/token';
export const INTROSPECTION_ENDPOINT_PATH = '/oauth/introspect';
export const REVOCATION_ENDPOINT_PATH = '/oauth/revoke';
/** OpenID Connect Back-Channel Logout 1.0: where a fronted provider (oidc mode) posts its logout tokens. */
export const BACKCHANNEL_LOGOUT_PATH = '/oauth/backchannel-logout';

/** Discovery and the public keys, local mode only (tokens/well-known-routes.ts). */
export const OPENID_CONFIGURATION_PATH = '/.well-known/openid-configuration';
export const JWKS_PATH = '/.well-known/jwks.json';

/** The account API (account/account-routes.ts); `:id` is Fastify's parameter. */
export const ACCOUNT_PATH = '/api/v1/account';
export const ACCOUNT_API_KEYS_PATH = '/api/v1/account/api-keys';
export const ACCOUNT_API_KEY_PATH = '/api/v1/account/api-keys/:id';
export const ACCOUNT_SESSIONS_PATH = '/api/v1/account/sessions';
export const ACCOUNT_SESSION_PATH = '/api/v1/account/sessions/:id';
/** The caller's own quotas: used, remaining and reset of each (limits/quotas/). */
export const ACCOUNT_LIMITS_PATH = '/api/v1/account/limits';
/** Second factors (step-up): what the user has, and TOTP enrolment. */
export const ACCOUNT_FACTORS_PATH = '/api/v1/account/factors';
export const ACCOUNT_TOTP_PATH = '/api/v1/account/factors/totp';
export const ACCOUNT_TOTP_CONFIRM_PATH = '/api/v1/account/factors/totp/confirm';
/** Passkeys: registration options for the signed-in user, then the browser's answer. */
export const ACCOUNT_PASSKEY_OPTIONS_PATH = '/api/v1/account/factors/passkeys/options';
export const ACCOUNT_PASSKEYS_PATH = '/api/v1/account/factors/passkeys';
/** A passkey login: the options (a challenge), then the assertion, answered by tokens. */
export const PASSKEY_LOGIN_OPTIONS_PATH = '/api/v1/auth/passkey/options';
export const PASSKEY_LOGIN_PATH = '/api/v1/auth/passkey';

/** The account page and its files (account/account-page.ts); `/account/` redirects to the page. */
export const ACCOUNT_PAGE_PATH = '/account';
export const ACCOUNT_PAGE_SLASH_PATH = '/account/';
export const ACCOUNT_PAGE_STYLES_PATH = '/account/account.css';
export const ACCOUNT_PAGE_SCRIPT_PATH = '/account/account.js';
export const ACCOUNT_PAGE_LIMITS_SCRIPT_PATH = '/account/account-limits.js';
/** The modules the page's script imports, one per concern, each beside it under /account/. */
export const ACCOUNT_PAGE_MODULES = ['page.js', 'dpop.js', 'session.js', 'keys.js', 'sessions.js', 'passkeys.js', 'factors.js'] as const;
export const ACCOUNT_PAGE_MODULE_PATHS: readonly string[] = ACCOUNT_PAGE_MODULES.map((file) => `/account/${file}`);
/** The page's icon (its `<link rel="icon">`): under /account/, so no route's `/favicon.ico` is taken. */
export const ACCOUNT_PAGE_ICON_PATH = '/account/favicon.svg';
/** What the page's login form needs to know: the local provider it signs in at, among several. */
export const ACCOUNT_PAGE_LOGIN_PATH = '/account/login.json';

/** Spec 4.3: where the status of an asynchronous request is polled; the spec shows both forms. */
export const REQUEST_STATUS_PREFIX = '/api/v1/requests/';
export const SHORT_REQUEST_STATUS_PREFIX = '/v1/requests/';
/**
 * The status routes take everything below the prefixes and parse `<id>/status`
 * themselves (async-requests/status-routes.ts), so every malformed id gets the same 404.
 */
export const REQUEST_STATUS_PATH = `${REQUEST_STATUS_PREFIX}*`;
export const SHORT_REQUEST_STATUS_PATH = `${SHORT_REQUEST_STATUS_PREFIX}*`;

/** Where a client polls request `id` (the prefixed form of the spec's full example): the Location of a captured 202. */
export function requestStatusPath(id: string): string {
  return `${REQUEST_STATUS_PREFIX}${id}/status`;
}

/** Every route the gateway registers on the public listener, as registered (any method). */
export const GATEWAY_PATHS: readonly string[] = [
  LOGIN_PATH,
  REFRESH_PATH,
  LOGOUT_PATH,
  TOKEN_ENDPOINT_PATH,
  INTROSPECTION_ENDPOINT_PATH,
  REVOCATION_ENDPOINT_PATH,
  BACKCHANNEL_LOGOUT_PATH,
  OPENID_CONFIGURATION_PATH,
  JWKS_PATH,
  ACCOUNT_PATH,
  ACCOUNT_API_KEYS_PATH,
  ACCOUNT_API_KEY_PATH,
  ACCOUNT_SESSIONS_PATH,
  ACCOUNT_SESSION_PATH,
  ACCOUNT_LIMITS_PATH,
  ACCOUNT_FACTORS_PATH,
  ACCOUNT_TOTP_PATH,
  ACCOUNT_TOTP_CONFIRM_PATH,
  ACCOUNT_PASSKEY_OPTIONS_PATH,
  ACCOUNT_PASSKEYS_PATH,
  PASSKEY_LOGIN_OPTIONS_PATH,
  PASSKEY_LOGIN_PATH,
  ACCOUNT_PAGE_PATH,
  ACCOUNT_PAGE_SLASH_PATH,
  ACCOUNT_PAGE_STYLES_PATH,
  ACCOUNT_PAGE_SCRIPT_PATH,
  ACCOUNT_PAGE_LIMITS_SCRIPT_PATH,
  ...ACCOUNT_PAGE_MODULE_PATHS,
  ACCOUNT_PAGE_ICON_PATH,
  ACCOUNT_PAGE_LOGIN_PATH,
  REQUEST_STATUS_PATH,
  SHORT_REQUEST_STATUS_PATH,
];

/**
 * The admin listener's paths (server/health.ts, server/metrics-route.ts,
 * async-requests/internal-routes.ts): another port, never the public one, so they
 * are no gateway paths there (a route may proxy `/metrics`). The health paths
 * alone may also answer on the public listener (`server.health.on: public`):
 * then, and only then, they are the gateway's there (isHealthPath).
 */
export const LIVENESS_PATH = '/healthz';
export const READINESS_PATH = '/readyz';
export const HEALTH_PATHS = [LIVENESS_PATH, READINESS_PATH] as const;

/** `/healthz` or `/readyz`, with or without a query: exact paths, so `/healthzone` stays a route's. */
export function isHealthPath(url: string): boolean {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path === LIVENESS_PATH || path === READINESS_PATH;
}
export const METRICS_PATH = '/metrics';
export const INTERNAL_STATUS_PATH = '/internal/v1/requests/:id/status';
/** The audit trail's entries, for tools (audit/list-route.ts). */
export const AUDIT_LIST_PATH = '/internal/v1/audit';

export const ADMIN_PATHS: readonly string[] = [LIVENESS_PATH, READINESS_PATH, METRICS_PATH, INTERNAL_STATUS_PATH, AUDIT_LIST_PATH];

/**
 * The spaces the gateway keeps for itself: every path below these prefixes is
 * Fastify's (an unknown one is its 404, never proxied), whether or not the
 * mode registers a route there (`/oauth/` when fronting a provider).
 */
export const GATEWAY_PATH_PREFIXES = ['/api/v1/auth/', '/oauth/', '/.well-known/', REQUEST_STATUS_PREFIX, SHORT_REQUEST_STATUS_PREFIX] as const;

/** Paths the gateway owns themselves and below (`/account`, `/account/…`), but not `/accounts`. */
export const GATEWAY_PATH_ROOTS = [ACCOUNT_PATH, ACCOUNT_PAGE_PATH] as const;

/** What may follow a root in a path of its own: `/` or `?`. */
const ROOT_FOLLOWERS = new Set([47, 63]);

export function isGatewayPath(path: string): boolean {
  // A handful of prefix checks: cheaper than any lookup structure at this size.
  for (const prefix of GATEWAY_PATH_PREFIXES) if (path.startsWith(prefix)) return true;
  // The root itself, below it, or it with a query (`/account?acr_values=…`, a step-up's address).
  for (const root of GATEWAY_PATH_ROOTS)
    if (path.startsWith(root) && (path.length === root.length || ROOT_FOLLOWERS.has(path.charCodeAt(root.length)))) return true;
  return false;
}

/** True when every path under `prefix` (as a route prefix) belongs to the gateway. */
export function isShadowedRoutePrefix(prefix: string): boolean {
  const withSlash = prefix.endsWith('/') ? prefix : `${prefix}/`;
  return GATEWAY_PATH_PREFIXES.some((own) => withSlash.startsWith(own)) || GATEWAY_PATH_ROOTS.some((root) => withSlash.startsWith(`${root}/`));
}
