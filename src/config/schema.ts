// The one schema of Gatehouse's configuration, assembled from its sections,
// each in a file named after it (server-schema.ts holds `server` and `admin`;
// route-schema.ts `routes`, `authorization` and `cors`).
// The TypeScript types below are inferred from it, so the code and the
// validation can never disagree. Every object is strict: a misspelt key is an
// error, not a silently ignored line. What types cannot say (routes that
// clash, addresses the proxy cannot read) is judged by content checks that
// live above this layer and are handed in (content-check-hooks.ts), with
// field paths like any other problem; config-load/ makes the schema with them.
import { z } from 'zod';
import { AuditSchema } from './audit-schema.js';
import type { ContentChecks } from './content-check-hooks.js';
import { checkHealthListener, checkKeysFile, checkProviderCredentials, checkRouteRules, checkServerLimits, checkUsersStore } from './cross-field-rules.js';
import { SIGNING_ALGORITHMS, TokensSchema } from './tokens-schema.js';
import { checkProviderIssuers, checkRouteProviders, IdentitySchema } from './providers-schema.js';
import { checkRotationSecrets } from './rotation-rules.js';
import { proxySchema } from './proxy-schema.js';
import { RequestsSchema } from './requests-schema.js';
import { LimitsSchema } from './limits-schema.js';
import { TracingSchema } from './tracing-schema.js';
import { AccountSchema } from './account-schema.js';
import { AuthorizationSchema, CorsSchema, RouteSchema, type RateLimitSchema } from './route-schema.js';
import { always } from './schema-primitives.js';
import { checkRouteUpstreams } from './upstream-schema.js';
import { AdminSchema, serverSchema } from './server-schema.js';
import { storeSchema } from './store-schema.js';
import { LogSchema } from './log-schema.js';

export { OidcIdentitySchema, type OidcIdentityConfig } from './identity-schema.js';
export { SIGNING_ALGORITHMS } from './tokens-schema.js';
export { LoginLimitsSchema } from './limits-schema.js';
export type { AccountConfig } from './account-schema.js';
export { RouteSchema } from './route-schema.js';
export type { ContentChecks } from './content-check-hooks.js';

// The keys file is judged even when other fields have problems: a config written from scratch learns of it in the same go.
export function createConfigSchema(checks: ContentChecks) {
  return z
    .strictObject({
      server: serverSchema(checks).prefault({}),
      admin: AdminSchema.prefault({}),
      log: LogSchema.prefault({}),
      store: storeSchema(checks).prefault({}),
      identity: IdentitySchema,
      tokens: TokensSchema.prefault({}),
      proxy: proxySchema(checks).prefault({}),
      requests: RequestsSchema.prefault({}),
      limits: LimitsSchema.prefault({}),
      tracing: TracingSchema.prefault({}),
      authorization: AuthorizationSchema.prefault({}),
      /** Browser applications on other origins that may call the gateway's own endpoints (login, refresh, token, status). */
      cors: CorsSchema.optional(),
      account: AccountSchema.prefault({}),
      audit: AuditSchema.prefault({}),
      routes: z
        .array(RouteSchema)
        .superRefine((routes, ctx): void => checks.routes(routes, ctx), { when: always })
        .default([]),
    })
    .superRefine((value, ctx) => checkKeysFile(value, ctx.issues), { when: always })
    .superRefine((value, ctx) => {
      if (value.server.health.on === 'public') checks.healthOnPublic(value.routes, ctx);
    })
    .check((ctx) => checkHealthListener(ctx.value.server, ctx.value.admin, ctx.issues))
    .check((ctx) => checkRouteRules(ctx.value.routes, ctx.value.authorization, ctx.issues, ctx.value.server.tls?.clientCertificates !== undefined))
    .check((ctx) => checkProviderCredentials(ctx.value.identity, ctx.issues))
    .check((ctx) => checkProviderIssuers(ctx.value.identity, ctx.value.tokens, ctx.issues))
    .check((ctx) => checkRouteProviders(ctx.value.identity, ctx.value.routes, ctx.issues))
    .check((ctx) => checkRouteUpstreams(ctx.value.routes, ctx.value.identity, ctx.issues))
    .check((ctx) => checkServerLimits(ctx.value.server, ctx.value.store, ctx.issues))
    .check((ctx) => checkUsersStore(ctx.value.identity, ctx.value.store, ctx.issues))
    .check((ctx) => checkRotationSecrets(ctx.value, ctx.issues));
}

type ConfigSchema = ReturnType<typeof createConfigSchema>;

export type Config = z.infer<ConfigSchema>;
export type ConfigInput = z.input<ConfigSchema>;
export type ServerConfig = Config['server'];
export type AdminConfig = Config['admin'];
export type StoreConfig = Config['store'];
export type IdentityConfig = Config['identity'];
export type TokensConfig = Config['tokens'];
export type CorsConfig = z.infer<typeof CorsSchema>;
export type RouteConfig = Config['routes'][number];
export type ProxyConfig = Config['proxy'];
export type AuditConfig = Config['audit'];
export type RequestsConfig = Config['requests'];
export type LimitsConfig = Config['limits'];
export type PasswordHashingConfig = Config['limits']['passwordHashing'];
export type LoginLimitsConfig = Config['limits']['login'];
export type RateLimitConfig = z.infer<typeof RateLimitSchema>;
export type RouteAsyncConfig = RouteConfig['async'];
export type IdentityHeaderNames = ProxyConfig['identityHeaders'];
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];
