// The paths the gateway answers itself (Fastify routes); everything else is
// the proxy's. A route may not claim them: they would be shadowed silently.
export const GATEWAY_PATH_PREFIXES = ['/api/v1/auth/', '/oauth/', '/.well-known/', '/api/v1/requests/', '/v1/requests/'] as const;

/** Paths the gateway owns themselves and below (`/account`, `/account/…`), but not `/accounts`. */
export const GATEWAY_PATH_ROOTS = ['/api/v1/account', '/account'] as const;

export function isGatewayPath(path: string): boolean {
  // A handful of prefix checks: cheaper than any lookup structure at this size.
  for (const prefix of GATEWAY_PATH_PREFIXES) if (path.startsWith(prefix)) return true;
  for (const root of GATEWAY_PATH_ROOTS) if (path.startsWith(root) && (path.length === root.length || path.charCodeAt(root.length) === 47 /* / */)) return true;
  return false;
}

/** True when every path under `prefix` (as a route prefix) belongs to the gateway. */
export function isShadowedRoutePrefix(prefix: string): boolean {
  const withSlash = prefix.endsWith('/') ? prefix : `${prefix}/`;
  return GATEWAY_PATH_PREFIXES.some((own) => withSlash.startsWith(own)) || GATEWAY_PATH_ROOTS.some((root) => withSlash.startsWith(`${root}/`));
}
