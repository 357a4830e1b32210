// The one schema of Gatehouse's configuration. The TypeScript types below are
// inferred from it, so the code and the validation can never disagree.
// Every object is strict: a misspelt key is an error, not a silently ignored line.
import { z } from 'zod';
import * as d from './defaults.js';

const port = z.number().int().min(0).max(65_535);
const positiveInt = z.number().int().positive();
const host = z.string().min(1);

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

const storeUrl = z
  .string()
  .regex(/^(redis|rediss|redis-sentinel|redis-cluster):\/\/.+/, {
    error: 'must be a redis://, rediss://, redis-sentinel:// or redis-cluster:// URL',
  });

export const ServerSchema = z.strictObject({
  host: host.default(d.DEFAULT_HOST),
  port: port.default(d.DEFAULT_PORT),
  /** Body limit of the gateway's own JSON endpoints; proxied routes have their own. */
  apiBodyLimitBytes: positiveInt.default(d.DEFAULT_API_BODY_LIMIT_BYTES),
  /** Addresses or CIDRs whose `X-Forwarded-*` headers are believed. */
  trustedProxies: z.array(z.string().min(1)).default([]),
});

export const AdminSchema = z.strictObject({
  enabled: z.boolean().default(true),
  host: host.default(d.DEFAULT_ADMIN_HOST),
  port: port.default(d.DEFAULT_ADMIN_PORT),
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

export const IdentitySchema = z.discriminatedUnion('provider', [LocalIdentitySchema]);

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
});

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

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
  connectTimeoutMs: positiveInt.default(d.DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS),
  responseTimeoutMs: positiveInt.default(d.DEFAULT_UPSTREAM_RESPONSE_TIMEOUT_MS),
  /** Absent: no limit (bodies stream through; nothing is buffered). */
  bodyLimitBytes: positiveInt.optional(),
  /** Close a proxied WebSocket when the token that opened it expires. */
  closeWebSocketOnExpiry: z.boolean().default(true),
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
    .prefault({}),
  /** How long a target that refused connections is skipped before it is tried again. */
  targetDownMs: positiveInt.default(d.DEFAULT_TARGET_DOWN_MS),
  /** Keep-alive sockets per upstream target. */
  maxSocketsPerTarget: positiveInt.default(d.DEFAULT_MAX_SOCKETS_PER_TARGET),
  /** The HTTP forwarding engine; the default was chosen by `npm run bench -- engines`. */
  engine: z.enum(['undici', 'http-proxy']).default(d.DEFAULT_PROXY_ENGINE),
});

export const ConfigSchema = z.strictObject({
  server: ServerSchema.prefault({}),
  admin: AdminSchema.prefault({}),
  log: z.strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') }).prefault({}),
  store: StoreSchema.prefault({}),
  identity: IdentitySchema,
  tokens: TokensSchema,
  proxy: ProxySchema.prefault({}),
  routes: z.array(RouteSchema).default([]),
});

export type Config = z.infer<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;
export type ServerConfig = Config['server'];
export type AdminConfig = Config['admin'];
export type StoreConfig = Config['store'];
export type IdentityConfig = Config['identity'];
export type TokensConfig = Config['tokens'];
export type RouteConfig = Config['routes'][number];
export type ProxyConfig = Config['proxy'];
export type IdentityHeaderNames = ProxyConfig['identityHeaders'];
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];
