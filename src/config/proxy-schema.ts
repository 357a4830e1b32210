// The `proxy` section of the config schema: how the proxy forwards to the
// routes' upstreams, the headers backends get and the upstream connections.
import { z } from 'zod';
import type { ContentChecks } from './content-check-hooks.js';
import * as d from './defaults.js';
import { headerName, positiveInt, withoutIssues } from './schema-primitives.js';
import { ProxyUpstreamTlsSchema } from './upstream-schema.js';

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
