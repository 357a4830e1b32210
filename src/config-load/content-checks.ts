// What the schema's types cannot say about a config's content: routes that
// clash, prefixes the gateway serves itself, addresses and URLs that the
// parts built from the config would refuse. Each check is a dry run of the
// very code that later builds that part (route table, header policy, store
// URL parser), so the check and the start can never disagree; none of them
// touches the file system or the network. The schema is made with them
// (createConfigSchema) and calls them as zod refinements, so their problems
// come with field paths like any other.
import type { z } from 'zod';
import { compileClientAddress } from '../http/client-address.js';
import { HEALTH_PATHS, isShadowedRoutePrefix } from '../http/gateway-paths.js';
import { RouteTable, type CompiledRoute } from '../routing/route-table.js';
import { HeaderPolicy } from '../proxy/upstream-headers.js';
import { parseStoreUrl } from '../store/store-url.js';
import type { ContentChecks, IdentityHeaderNames, RouteConfig } from '../config/schema.js';

type Context = z.RefinementCtx;

/**
 * The routes, each on its own and against each other. Each must compile in
 * the route table and must not claim the gateway's own paths. A second route
 * with a name already taken, or with the prefix and host of an earlier one
 * for some of the same methods, would be silently ignored (the first one wins
 * every match). Run even when some routes failed the schema (`when` below),
 * so the whole list is judged at once; hence the defensive reading of each
 * entry, and no second word on a route whose fault the schema told already.
 * On the list rather than on each route, so that a single route still parses
 * as the schema alone says (tests build routes that the table must refuse).
 */
export function checkRoutes(routes: readonly unknown[], ctx: Context): void {
  // Run even when the list has issues (to name each clash): a value that is no list at all was told already.
  if (!Array.isArray(routes)) return;
  const faulty = new Set(ctx.issues.map((issue) => issue.path?.[0]));
  const names = new Map<string, number>();
  const seen: Array<{ index: number; route: CompiledRoute }> = [];
  routes.forEach((entry, index) => {
    const name = (entry as { name?: unknown } | null)?.name;
    if (typeof name === 'string') {
      const first = names.get(name);
      if (first === undefined) names.set(name, index);
      else ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate route name ${JSON.stringify(name)} (also routes[${first}])` });
    }
    let route: CompiledRoute | undefined;
    if (faulty.has(index)) {
      route = compiledOrUndefined(entry); // what fails to compile is what the schema told already
    } else {
      try {
        route = RouteTable.compile([entry as RouteConfig]).routes[0]!;
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: [index], message: (error as Error).message });
      }
    }
    if (route === undefined) return;
    // Judged on the canonical prefix: `/api/v1/%61uth` is `/api/v1/auth` too.
    if (isShadowedRoutePrefix(route.prefix)) {
      ctx.addIssue({ code: 'custom', path: [index, 'prefix'], message: `${route.config.prefix} is served by the gateway itself` });
    }
    const clash = seen.find(({ route: other }) => other.prefix === route.prefix && other.host === route.host && methodsOverlap(other, route));
    if (clash) {
      const host = route.host === undefined ? '' : ` on host ${JSON.stringify(route.host)}`;
      ctx.addIssue({
        code: 'custom',
        path: [index, 'prefix'],
        message: `duplicate prefix ${JSON.stringify(route.config.prefix)}${host} (also routes[${clash.index}])`,
      });
    }
    seen.push({ index, route });
  });
}

/**
 * With `server.health.on: public`, `/healthz` and `/readyz` are the gateway's
 * on the public listener: a route whose prefix is one of them, or below one,
 * would never be reached. A broader route (`/`) keeps everything else.
 */
export function checkHealthOnPublic(routes: readonly unknown[], ctx: Context): void {
  if (!Array.isArray(routes)) return;
  routes.forEach((entry, index) => {
    const route = compiledOrUndefined(entry);
    if (route === undefined) return;
    const claimed = HEALTH_PATHS.find((path) => route.prefix === path || route.prefix.startsWith(`${path}/`));
    if (claimed !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['routes', index, 'prefix'],
        message: `${route.config.prefix} is served by the gateway itself (server.health.on: public)`,
      });
    }
  });
}

/** A route the schema found faults with, compiled if its matching fields can be read at all. */
function compiledOrUndefined(entry: unknown): CompiledRoute | undefined {
  const route = entry as Partial<Record<keyof RouteConfig, unknown>> | null;
  if (typeof route?.prefix !== 'string') return undefined;
  if (route.host !== undefined && typeof route.host !== 'string') return undefined;
  if (route.rewritePrefix !== undefined && typeof route.rewritePrefix !== 'string') return undefined;
  if (route.methods !== undefined && !(Array.isArray(route.methods) && route.methods.every((m) => typeof m === 'string'))) return undefined;
  try {
    return RouteTable.compile([route as RouteConfig]).routes[0];
  } catch {
    return undefined;
  }
}

/** Undefined methods: every method. */
function methodsOverlap(a: CompiledRoute, b: CompiledRoute): boolean {
  if (a.methods === undefined || b.methods === undefined) return true;
  for (const method of a.methods) if (b.methods.has(method)) return true;
  return false;
}

/** `store.url`: the scheme is the schema's; hosts, ports, credentials' encoding and parameters are the parser's. */
export function checkStoreUrl(url: string, ctx: Context): void {
  try {
    parseStoreUrl(url);
  } catch (error) {
    // The parser's message shows the URL with its password masked.
    ctx.addIssue({ code: 'custom', path: [], message: (error as Error).message });
  }
}

/** One `server.trustedProxies` entry: an address, a CIDR range or a proxy-addr name (loopback, linklocal, uniquelocal). */
export function checkTrustedProxy(entry: string, ctx: Context): void {
  try {
    compileClientAddress([entry]);
  } catch (error) {
    ctx.addIssue({ code: 'custom', path: [], message: (error as Error).message });
  }
}

/** `proxy.identityHeaders`: distinct names that no other header policy rule owns. */
export function checkIdentityHeaders(identityHeaders: IdentityHeaderNames, ctx: Context): void {
  try {
    new HeaderPolicy({ identityHeaders, clientAddress: compileClientAddress([]) });
  } catch (error) {
    ctx.addIssue({ code: 'custom', path: [], message: (error as Error).message.replace(/^proxy\.identityHeaders: /, '') });
  }
}

/** What config/ asks of this layer: handed to createConfigSchema by the loader. */
export const contentChecks: ContentChecks = {
  storeUrl: checkStoreUrl,
  trustedProxy: checkTrustedProxy,
  identityHeaders: (names, ctx) => checkIdentityHeaders(names as IdentityHeaderNames, ctx),
  routes: checkRoutes,
  healthOnPublic: checkHealthOnPublic,
};
