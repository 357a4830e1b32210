// The routes' part of the config schema: where requests go, who may send
// them, how fast, from which origins, and what their 202 answers become.
import { z } from 'zod';
import { RoleNameSchema } from '../core/role-name.js';
import * as d from './defaults.js';
import { acrValue, help, HTTP_METHODS, httpUrl, positiveInt } from './schema-primitives.js';
import { ProviderNameSchema } from './providers-schema.js';
import { QuotasSchema } from './quota-schema.js';
import { IdentityAssertionSchema, UpstreamTlsSchema } from './upstream-schema.js';

/** A route's request limit: `points` requests per `durationS`, per client address (public) or per subject. */
export const RateLimitSchema = z.strictObject({
  /** Requests allowed in each window; past them, 429 with `Retry-After`. */
  points: positiveInt.meta(help('requests allowed in each window', '100')),
  /** The window's length. */
  durationS: positiveInt.meta(help("the window's length in seconds", '60')),
});

/** Client certificate subjects, as the gateway forwards them (RFC 4514 order of the certificate, comma-separated). */
const ClientSubjectsSchema = z.array(z.string().min(1).max(1024)).min(1);

/** RFC 9470: the `acr` values a token may carry (one of them, or a configured level ranking above one: `tokens.acr`). */
const AcrValuesSchema = z.array(acrValue).min(1);

/** RFC 9470: the most seconds since the user last proved themselves (the token's `auth_time`). */
const MaxAgeSchema = positiveInt;

/** What a rule may name; it must name one. */
const RULE_FIELDS = ['anyRole', 'allRoles', 'scopes', 'clientSubjects', 'acr', 'maxAgeS'] as const;

/**
 * Who may use a route (or one method of it): any of `anyRole`, all of
 * `allRoles`, every one of `scopes`, one of `clientSubjects`, a login of one
 * of the `acr` levels within `maxAgeS`. Each that is given must be met.
 */
export const AccessRuleSchema = z
  .strictObject({
    /** The caller needs at least one of these roles. */
    anyRole: z.array(RoleNameSchema).min(1).optional(),
    /** The caller needs every one of these roles. */
    allRoles: z.array(RoleNameSchema).min(1).optional(),
    /** The token (or API key) needs every one of these scopes. */
    scopes: z.array(RoleNameSchema).min(1).optional(),
    /** The connection's client certificate, verified by `server.tls.clientCertificates`, needs one of these subjects. */
    clientSubjects: ClientSubjectsSchema.optional(),
    /** The token's login must have reached one of these levels (its `acr`); below, 401 with the RFC 9470 challenge. */
    acr: AcrValuesSchema.optional(),
    /** The token's login (`auth_time`) must be at most this many seconds old; older, 401 with the RFC 9470 challenge. */
    maxAgeS: MaxAgeSchema.optional(),
  })
  .refine((rule) => RULE_FIELDS.some((field) => rule[field] !== undefined), { error: `names none of ${RULE_FIELDS.join(', ')}` });

/** A route's rule, and rules of their own for some methods (which replace it for them). */
export const AuthorizeSchema = z.strictObject({
  /** The caller needs at least one of these roles (names declared in `authorization.roles`). */
  anyRole: z.array(RoleNameSchema).min(1).optional(),
  /** The caller needs every one of these roles. */
  allRoles: z.array(RoleNameSchema).min(1).optional(),
  /** The token (or API key) needs every one of these scopes (names declared in `authorization.scopes`). */
  scopes: z.array(RoleNameSchema).min(1).optional(),
  /**
   * The connection's client certificate (mTLS, `server.tls.clientCertificates`) must be verified and its subject one of
   * these, written as the gateway forwards it in X-Gatehouse-Client-Subject (`CN=build-agent,O=Example`); without one, 403.
   */
  clientSubjects: ClientSubjectsSchema.optional(),
  /**
   * Step-up (RFC 9470): the token's login must have reached one of these
   * levels (its `acr`; a configured level ranking above one counts,
   * `tokens.acr`). Below, 401 with `WWW-Authenticate: Bearer
   * error="insufficient_user_authentication", acr_values="…"`; the client logs
   * in again with them (docs/guides/step-up.md).
   */
  acr: AcrValuesSchema.optional(),
  /** Step-up (RFC 9470): the token's login (`auth_time`) must be at most this many seconds old; older, 401 with `max_age` in the challenge. */
  maxAgeS: MaxAgeSchema.optional(),
  /** Rules of their own for some methods, each replacing the route's rule for its method. */
  methods: z.partialRecord(z.enum(HTTP_METHODS), AccessRuleSchema).optional(),
});

/**
 * Cross-origin access for browser applications (the Fetch standard's CORS
 * protocol): which origins may call, with which methods and headers, and
 * which response headers their scripts may read. Exact origins, or a pattern
 * with one `*` for a subdomain label (`https://*.example.com`).
 */
export const CorsSchema = z.strictObject({
  /** Origins that may call: exact (`https://app.example.com`), or with one `*` for a subdomain label (`https://*.example.com`, never the bare domain). */
  allowedOrigins: z
    .array(
      z
        .string()
        .regex(/^https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$/, { error: 'must be an origin (scheme://host[:port]), optionally https://*.example.com' }),
    )
    .min(1)
    .meta(help('the origins (browser applications) that may call', '["https://app.example.com"]')),
  /** Methods a preflight may ask for (`Access-Control-Allow-Methods`). */
  allowedMethods: z.array(z.enum(HTTP_METHODS)).min(1).default(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']),
  /** Request headers a preflight may ask for (`Access-Control-Allow-Headers`). */
  allowedHeaders: z.array(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/)).default(['authorization', 'content-type', 'x-request-id']),
  /** Response headers scripts may read (`Access-Control-Expose-Headers`). */
  exposedHeaders: z.array(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/)).default(['location', 'retry-after', 'x-request-id']),
  /** Send `Access-Control-Allow-Credentials: true` (scripts' requests with cookies or HTTP authentication). */
  allowCredentials: z.boolean().default(false),
  /** How long a browser may keep a preflight's answer (`Access-Control-Max-Age`). */
  maxAgeS: z.number().int().min(0).max(86_400).default(600),
});

/** The roles and scopes route rules may name: a rule naming another one is a typo, refused at load. */
export const AuthorizationSchema = z.strictObject({
  /** The roles route rules may name (1 to 64 letters, digits and `. _ : / -` each). */
  roles: z.array(RoleNameSchema).default([]),
  /** The scopes route rules may name (the same characters). */
  scopes: z.array(RoleNameSchema).default([]),
});

/** The proxy's routes: each sends the requests under its prefix to its upstreams; the longest matching prefix wins. */
export const RouteSchema = z.strictObject({
  /** Names the route in logs and metrics, and must be unique. Absent: the prefix as written stands for it. */
  name: z.string().min(1).optional(),
  /** Matched on whole path segments: `/a/b` matches `/a/b` and `/a/b/c`, not `/a/bc`. */
  prefix: z
    .string()
    .regex(/^\/[^?#]*$/, { error: 'must be a path starting with / and holding no ? or #' })
    .meta(help('the path prefix the route takes', '/api/v1/orders')),
  /** The methods the route takes (`HEAD` goes where `GET` goes); a method no route takes at its paths gets 405. Absent: every method. */
  methods: z.array(z.enum(HTTP_METHODS)).min(1).optional(),
  /** Match only requests for this host name (the `Host` header, without its port). Absent: any host. */
  host: z.string().min(1).optional(),
  /** The backends, round-robin over those not marked down. */
  upstreams: z.array(httpUrl).min(1).meta(help('the backends requests go to', '["http://127.0.0.1:3000"]')),
  /** Replaces the matched prefix before forwarding (e.g. `/api/v1/orders` → `/orders`). */
  rewritePrefix: z
    .string()
    .regex(/^\/[^?#]*$/)
    .optional(),
  /** `required`: a valid bearer token (401 otherwise); `none`: a public route. */
  auth: z.enum(['required', 'none']).default('required'),
  /**
   * Admit only sender-constrained callers (DPoP, RFC 9449): a plain bearer
   * token gets 401 with the DPoP challenge, so the tokens that reach this
   * route are useless to whoever copies them. Has no effect with `auth: none`.
   */
  requireDpop: z.boolean().default(false),
  /**
   * With several identity providers (`identity.provider: several`): the
   * providers whose tokens this route accepts, by name; a token of any other
   * gets 401 with a `WWW-Authenticate` challenge. Absent: every provider's.
   */
  providers: z.array(ProviderNameSchema).min(1).optional(),
  /** TLS to the `https://` upstreams: CAs, SNI, a client certificate (mTLS), HTTP/2. Absent: `proxy.upstreamTls`, the system's CAs, the URL's host. */
  tls: UpstreamTlsSchema.optional(),
  /** Pass the client's `Authorization` header on to the upstream (else it is removed). */
  forwardAuthorization: z.boolean().default(false),
  /** Send the upstream a signed, short-lived JWT naming the caller (opt-in; see docs/guides/backend-identity.md). */
  identityAssertion: IdentityAssertionSchema.optional(),
  /**
   * Take paths with an encoded slash (`%2F`); refused (400) otherwise. Even
   * then, a dot segment beside one (`..%2F`) or a path that reads as another
   * route once `%2F` is decoded is refused.
   */
  allowEncodedSlashes: z.boolean().default(false),
  /**
   * Refuse paths a backend could read as another path: `;` parameters,
   * double encoding, escapes that are not UTF-8, segments ending in `.` or a
   * space, Unicode look-alikes of `/`, `\`, `.` or `%` (`／`, `∕`, `．`).
   * Off only for a backend that needs such paths; even then a path that
   * some server would read as another route is refused.
   */
  strictPaths: z.boolean().default(true),
  /** Until a connection to an upstream is made. */
  connectTimeoutMs: positiveInt.default(d.DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS),
  /** Until the upstream's response head arrives, counted once the request body is sent; past it, 504. */
  responseTimeoutMs: positiveInt.default(d.DEFAULT_UPSTREAM_RESPONSE_TIMEOUT_MS),
  /** The largest request body (413 past it). Absent: no limit (bodies stream through; nothing is buffered). */
  bodyLimitBytes: positiveInt.optional(),
  /** The whole request body must arrive within this, from the request's start (408 past it, the upstream request aborted). */
  requestDeadlineMs: positiveInt.default(d.DEFAULT_REQUEST_DEADLINE_MS),
  /** The body must bring at least this many bytes a second over each `bodyRateWindowMs`; 0: no minimum. */
  minBodyBytesPerS: z.number().int().min(0).default(d.DEFAULT_MIN_BODY_BYTES_PER_S),
  /** The window over which `minBodyBytesPerS` is measured. */
  bodyRateWindowMs: positiveInt.default(d.DEFAULT_BODY_RATE_WINDOW_MS),
  /**
   * In-flight upstream requests this route may hold of its targets' shared
   * connections; past it, 503 with `Retry-After: 1`. Absent: a public route gets
   * `proxy.publicRouteMaxUpstreamConnections`, an authenticated one the whole pool.
   */
  maxUpstreamConnections: positiveInt.optional(),
  /**
   * A request limit: `points` requests per `durationS`, per client address
   * (public route) or per subject, shared by every instance through the
   * store. Absent: no limit, and the route's requests cost nothing extra.
   */
  rateLimit: RateLimitSchema.optional(),
  /** Limits keyed on who calls, sized by tier, all applied (see docs/guides/quotas.md). Absent: none. */
  quotas: QuotasSchema.optional(),
  /** Browser applications on other origins that may call this route. */
  cors: CorsSchema.optional(),
  /** Roles or scopes a caller needs (403 otherwise); only on routes with `auth: required`. */
  authorize: AuthorizeSchema.optional(),
  /** Close a proxied WebSocket when the token that opened it expires. */
  closeWebSocketOnExpiry: z.boolean().default(true),
  /**
   * End a proxied HTTP exchange still in progress (a stream, a download, an
   * upload) when the token that opened it expires. Off: it ends with its
   * session (logout, revocation, the session's own end), not its token.
   */
  endExchangesOnExpiry: z.boolean().default(false),
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
      /** How long one question to the upstream's status URL may take. */
      statusTimeoutMs: positiveInt.default(d.DEFAULT_STATUS_TIMEOUT_MS),
    })
    .prefault({}),
});
