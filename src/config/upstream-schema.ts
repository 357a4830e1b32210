// What a route tells its backends beyond the request: how the gateway speaks
// TLS to them (`tls`, with `proxy.upstreamTls`), and the signed identity it
// hands them (`identityAssertion`). Their part of the config schema, with the
// rules that weigh them against the rest of the config.
import { z } from 'zod';
import * as d from './defaults.js';
import { signsOwnTokens } from './providers-schema.js';

type Issues = z.core.$ZodRawIssue[];

/**
 * TLS to a route's `https://` upstreams. Verification is never turned off: a
 * certificate that does not verify (untrusted, another name, expired) fails
 * the request with 502, it is never sent over plain HTTP instead. Files are
 * PEM, relative to the config file's folder, read at start and at each reload
 * of the routes; one that is missing or unreadable is a config error.
 */
export const UpstreamTlsSchema = z
  .strictObject({
    /** The CAs the upstream's certificate must chain to, in place of the system's (a private CA). Absent: `proxy.upstreamTls.caFile`, else the system's CAs. */
    caFile: z.string().min(1).optional(),
    /**
     * The name sent in SNI and looked for in the upstream's certificate. Absent: the upstream URL's
     * host name (for an IP address, no SNI, and the certificate must name that address).
     */
    servername: z.string().min(1).optional(),
    /** A client certificate (with its chain) shown to the upstream: mTLS to the backend. Needs `keyFile`. */
    certFile: z.string().min(1).optional(),
    /** The client certificate's private key (unencrypted PEM). Needs `certFile`. */
    keyFile: z.string().min(1).optional(),
    /** Offer HTTP/2 (ALPN `h2`) to the upstream; it answers in HTTP/1.1 if it does not speak it. */
    http2: z.boolean().default(false),
  })
  .check((ctx) => {
    const { certFile, keyFile } = ctx.value;
    if ((certFile === undefined) === (keyFile === undefined)) return;
    const missing = certFile === undefined ? 'certFile' : 'keyFile';
    ctx.issues.push({ code: 'custom', path: [missing], message: `a client certificate needs both certFile and keyFile`, input: undefined });
  });

/** Proxy-wide TLS to `https://` upstreams; a route's `tls` takes precedence. */
export const ProxyUpstreamTlsSchema = z.strictObject({
  /** The CAs every route's `https://` upstreams are checked against, in place of the system's, unless the route names its own. Absent: the system's CAs. */
  caFile: z.string().min(1).optional(),
});

/**
 * A signed identity for the backend: with each request the gateway sends a
 * short-lived JWT (in `proxy.identityHeaders.assertion`) naming the caller,
 * signed with its own signing key, so the backend checks one signature
 * against the gateway's JWKS instead of trusting headers. Local identity
 * only (fronting an OpenID Provider, the gateway holds no signing keys), and
 * only on routes with `auth: required`.
 */
export const IdentityAssertionSchema = z.strictObject({
  /** The assertion's `aud`: what the backend expects. Absent: the route's `name` (its prefix when it has none). */
  audience: z.string().min(1).optional(),
  /** Seconds from `iat` to `exp`, at most 60. An assertion is used again for the same session while half of it is left. */
  lifetimeS: z.number().int().min(1).max(d.MAX_ASSERTION_LIFETIME_S).default(d.MAX_ASSERTION_LIFETIME_S),
});

interface RouteUpstreams {
  upstreams: readonly string[];
  auth?: string | undefined;
  tls?: unknown;
  identityAssertion?: unknown;
}

/**
 * A route's TLS settings with an `http://` upstream would send that one's
 * requests in the clear: refused, as is an assertion nobody could be named
 * in (a public route) or signed for (a gateway fronting an OpenID Provider
 * holds no signing keys).
 */
export function checkRouteUpstreams(routes: readonly RouteUpstreams[], identity: { provider: string }, issues: Issues): void {
  routes.forEach((route, index) => {
    if (route.tls !== undefined) {
      route.upstreams.forEach((url, i) => {
        if (!/^http:/i.test(url)) return;
        const message = 'an http:// upstream on a route with tls settings: its requests would go unencrypted (use https://, or remove tls)';
        issues.push({ code: 'custom', path: ['routes', index, 'upstreams', i], message, input: url });
      });
    }
    if (route.identityAssertion === undefined) return;
    const at = ['routes', index, 'identityAssertion'];
    if (route.auth === 'none') {
      issues.push({ code: 'custom', path: at, message: 'a public route (auth: none) has no caller to assert', input: route.identityAssertion });
    }
    if (!signsOwnTokens(identity)) {
      const message =
        "needs the gateway's own signing keys (identity.provider: local); fronting an OpenID Provider, forward its token instead (forwardAuthorization: true)";
      issues.push({ code: 'custom', path: at, message, input: route.identityAssertion });
    }
  });
}
