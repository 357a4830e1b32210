// The proxy's routing state compiled from config: the route table and one
// target pool per route. Replaced as a whole on reload, so a request sees
// either the old routes or the new ones, never a mix.
import type { ProxyConfig, RouteConfig } from '../config/schema.js';
import { isShadowedRoutePrefix } from '../http/gateway-paths.js';
import type { CertificateExpiry } from '../observability/metrics.js';
import { RouteTable, type CompiledRoute } from '../routing/route-table.js';
import { UpstreamPool, type TargetRegistry } from './upstream-pool.js';
import { compileUpstreamTls } from './upstream-tls.js';

export class ProxyRoutes {
  readonly table: RouteTable;
  readonly #pools: Map<CompiledRoute, UpstreamPool>;

  private constructor(table: RouteTable, pools: Map<CompiledRoute, UpstreamPool>) {
    this.table = table;
    this.#pools = pools;
  }

  /** Throws an Error listing the problems when the routes cannot be served as given. */
  static compile(routes: readonly RouteConfig[], proxy: ProxyConfig, registry: TargetRegistry): ProxyRoutes {
    const table = RouteTable.compile(routes);
    // Judged on the canonical prefix: `/api/v1/%61uth` is `/api/v1/auth` too.
    const problems = table.routes
      .filter((route) => isShadowedRoutePrefix(route.prefix))
      .map((route) => `routes.${routes.indexOf(route.config)}.prefix: ${route.config.prefix} is served by the gateway itself`);
    if (problems.length > 0) throw new Error(`invalid routes:\n${problems.map((p) => `  - ${p}`).join('\n')}`);

    const pools = new Map<CompiledRoute, UpstreamPool>();
    const origins = new Set<string>();
    for (const route of table.routes) {
      const targets = route.config.upstreams.map((url) => registry.target(url));
      targets.forEach((t) => origins.add(t.origin));
      // Its files are read here, at start and at each reload: a renewed certificate applies from the next reload.
      const tls = compileUpstreamTls(route.config.tls, proxy.upstreamTls.caFile);
      pools.set(route, new UpstreamPool(targets, proxy.targetDownMs, inFlightCap(route.config, proxy), tls));
    }
    registry.retainOnly(origins);
    return new ProxyRoutes(table, pools);
  }

  /** Each route's upstream client certificate and its expiry (the certificate metric). */
  clientCertificates(): CertificateExpiry[] {
    const shown: CertificateExpiry[] = [];
    for (const [route, pool] of this.#pools) {
      const notAfterS = pool.tls?.clientCertificateNotAfterS;
      if (notAfterS !== undefined) shown.push({ use: 'upstream_client', name: route.name, notAfterS });
    }
    return shown;
  }

  pool(route: CompiledRoute): UpstreamPool {
    const pool = this.#pools.get(route);
    if (!pool) throw new Error(`no pool for route ${route.name}`);
    return pool;
  }
}

/**
 * A route's cap on in-flight upstream requests: its own, else a public
 * route's default (unauthenticated traffic must leave the shared targets'
 * connections to authenticated routes), else none. A reload starts the count
 * afresh; requests in flight then release the old pool's places.
 */
function inFlightCap(route: RouteConfig, proxy: ProxyConfig): number {
  if (route.maxUpstreamConnections !== undefined) return route.maxUpstreamConnections;
  return route.auth === 'none' ? proxy.publicRouteMaxUpstreamConnections : Infinity;
}
