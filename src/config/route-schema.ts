// The routes' part of the config schema: where requests go, who may send
// them, how fast, from which origins, and what their 202 answers become.
import { z } from 'zod';
import { RoleNameSchema } from '../core/role-name.js';
import * as d from './defaults.js';
import { HTTP_METHODS, httpUrl, positiveInt } from './schema-primitives.js';

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

