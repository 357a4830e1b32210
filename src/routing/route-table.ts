// The proxy's routing: longest prefix on whole segments, then method and Host.
// Prefixes match without regard to ASCII case: backends on case-insensitive
// file systems or routers read `/Admin` as `/admin`, so a path that folds
// into a protected route must be that route's. Everything that can be decided
// once is decided in `compile`; `match` runs on every proxied request and
// allocates nothing.
import type { RouteConfig } from '../config/schema.js';
import { gatehouseError, isGatehouseError } from '../core/errors.js';
import { encodedSlashReading, lenientReading } from './lenient-path.js';
import { changesUnderFolding } from './lookalikes.js';
import { normalizeRequestTarget, type RequestTarget } from './request-target.js';

export interface CompiledRoute {
  readonly config: RouteConfig;
  /** `config.name`, or the prefix as written when the route has no name. */
  readonly name: string;
  /** The canonical prefix without trailing slash; `/` stays `/`. */
  readonly prefix: string;
  /** The canonical rewrite prefix without trailing slash (`/` stays `/`), or undefined. */
  readonly rewritePrefix: string | undefined;
  /** Allowed methods (HEAD added where GET is), or undefined for any method. */
  readonly methods: ReadonlySet<string> | undefined;
  /** Lower-case host name without port or trailing dot (IPv6 in brackets), or undefined for any Host. */
  readonly host: string | undefined;
}

/** What `match` compares against; `segmentPrefix` (lower case) is '' for `/` so one test covers every route. */
interface Entry {
  readonly route: CompiledRoute;
  readonly segmentPrefix: string;
  readonly host: string | undefined;
  readonly methods: ReadonlySet<string> | undefined;
}

export class RouteTable {
  /** In matching order: longest prefix first, host-specific before host-less, then config order. */
  readonly routes: readonly CompiledRoute[];
  private readonly entries: readonly Entry[];

  private constructor(entries: readonly Entry[]) {
    this.entries = entries;
    this.routes = entries.map((entry) => entry.route);
  }

  static compile(routes: readonly RouteConfig[]): RouteTable {
    const compiled = routes.map((config, index) => ({ entry: compileRoute(config), index }));
    compiled.sort(
      (a, b) =>
        b.entry.segmentPrefix.length - a.entry.segmentPrefix.length ||
        Number(b.entry.host !== undefined) - Number(a.entry.host !== undefined) ||
        a.index - b.index,
    );
    return new RouteTable(compiled.map(({ entry }) => entry));
  }

  /** The route for a canonical path (see `normalizeRequestTarget`), or undefined. */
  match(method: string, host: string | undefined, path: string): CompiledRoute | undefined {
    const hostEnd = host === undefined ? -1 : hostnameEnd(host);
    const entries = this.entries;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const prefix = entry.segmentPrefix;
      // Whole segments only: `/api/v1/orders` is not a prefix of `/api/v1/ordersX`.
      if (!path.startsWith(prefix) && !startsWithFolded(path, prefix)) continue;
      if (path.length !== prefix.length && path.charCodeAt(prefix.length) !== 0x2f) continue;
      if (entry.methods !== undefined && !entry.methods.has(method)) continue;
      if (entry.host !== undefined && (hostEnd < 0 || !sameHost(entry.host, host!, hostEnd))) continue;
      return entry.route;
    }
    return undefined;
  }

  /**
   * The methods some route would take at this path and host, when only the
   * method kept every route from matching: the `Allow` of a 405 (RFC 9110
   * 15.5.6). Empty when no route serves the path at all (a 404).
   */
  allowedMethods(host: string | undefined, path: string): string[] {
    const hostEnd = host === undefined ? -1 : hostnameEnd(host);
    const allowed = new Set<string>();
    for (const entry of this.entries) {
      const prefix = entry.segmentPrefix;
      if (!path.startsWith(prefix) && !startsWithFolded(path, prefix)) continue;
      if (path.length !== prefix.length && path.charCodeAt(prefix.length) !== 0x2f) continue;
      if (entry.host !== undefined && (hostEnd < 0 || !sameHost(entry.host, host!, hostEnd))) continue;
      if (entry.methods === undefined) return []; // a route for every method would have matched
      for (const method of entry.methods) allowed.add(method);
    }
    return [...allowed].sort();
  }
}

/** The path to request from the route's upstream: prefix rewritten, query appended. */
export function upstreamPath(route: CompiledRoute, target: RequestTarget): string {
  const rewrite = route.rewritePrefix;
  if (rewrite === undefined) return target.path + target.query;
  const rest = route.prefix === '/' ? target.path : target.path.slice(route.prefix.length);
  if (rewrite === '/') return (rest === '' ? '/' : rest) + target.query;
  return rewrite + rest + target.query;
}

export interface ResolvedRoute {
  readonly route: CompiledRoute;
  readonly target: RequestTarget;
  readonly upstreamPath: string;
}

/**
 * Normalises the request target, finds its route and refuses what would let a
 * request use one route's rules to reach another's paths.
 */
export function resolveRoute(table: RouteTable, method: string, host: string | undefined, rawUrl: string): ResolvedRoute {
  const target = normalizeRequestTarget(rawUrl);
  const route = table.match(method, host, target.path);
  if (route === undefined) {
    // A path some route serves, with another method: 405 naming the ones it takes, not a 404.
    const allowed = table.allowedMethods(host, target.path);
    if (allowed.length > 0) throw gatehouseError('method_not_allowed', { headers: { allow: allowed.join(', ') } });
    throw gatehouseError('route_not_found');
  }
  if (target.encodedSlash) {
    if (!route.config.allowEncodedSlashes) throw gatehouseError('invalid_request', { reason: 'encoded slash in path' });
    // The backend may decode `%2F`: `/files/..%2F..%2Fprivate` is `/private` to it, past the route and its rewritePrefix.
    const reading = encodedSlashReading(target.path);
    if (reading === undefined) throw gatehouseError('invalid_request', { reason: 'dot segment next to an encoded slash' });
    if (table.match(method, host, reading) !== route) throw gatehouseError('invalid_request', { reason: 'path reads as another route' });
  }
  // `/public/../admin` resolves to the protected route; `/admin/../public` to the
  // public one. Either way the client wrote one route and asked for another:
  // whatever they meant, some component on the way would read it the other way.
  if (target.dotSegments && table.match(method, host, target.rawPath) !== route) {
    throw gatehouseError('invalid_request', { reason: 'path climbs out of its route' });
  }
  if (target.ambiguity !== undefined) {
    if (route.config.strictPaths) throw gatehouseError('invalid_request', { reason: target.ambiguity });
    // The route's backend takes such paths; none may read as another route's.
    if (table.match(method, host, lenientReading(target.path)) !== route) {
      throw gatehouseError('invalid_request', { reason: 'path reads as another route' });
    }
  } else if (target.nonAscii && changesUnderFolding(target.path) && table.match(method, host, lenientReading(target.path)) !== route) {
    // A backend that folds compatibility characters reads `/site/%EF%BD%81dmin` (`ａdmin`) as `/site/admin`.
    throw gatehouseError('invalid_request', { reason: 'path reads as another route' });
  }
  return { route, target, upstreamPath: upstreamPath(route, target) };
}

function compileRoute(config: RouteConfig): Entry {
  const name = config.name ?? config.prefix;
  const prefix = canonicalPrefix(config.prefix, `route ${name}: prefix`);
  const rewritePrefix = config.rewritePrefix === undefined ? undefined : canonicalPrefix(config.rewritePrefix, `route ${name}: rewritePrefix`);
  let methods: Set<string> | undefined;
  if (config.methods !== undefined) {
    methods = new Set(config.methods);
    if (methods.has('GET')) methods.add('HEAD'); // RFC 9110 9.3.2: HEAD is GET without the body
  }
  const host = config.host === undefined ? undefined : canonicalHost(config.host, `route ${name}: host`);
  const route: CompiledRoute = { config, name, prefix, rewritePrefix, methods, host };
  return { route, segmentPrefix: prefix === '/' ? '' : prefix.toLowerCase(), host, methods };
}

/**
 * The prefix in the form requests are matched in: a prefix written `/%7Euser`
 * or `/a//b` must match what `normalizeRequestTarget` makes of such requests.
 */
function canonicalPrefix(prefix: string, what: string): string {
  // Checked here too: the schema does, but a prefix is never read as absolute-form.
  if (!prefix.startsWith('/') || prefix.includes('?')) throw new Error(`${what} ${JSON.stringify(prefix)} is not a path`);
  let target: RequestTarget;
  try {
    target = normalizeRequestTarget(prefix);
  } catch (error) {
    if (isGatehouseError(error)) throw new Error(`${what} ${JSON.stringify(prefix)}: ${error.reason}`);
    throw error;
  }
  if (target.dotSegments) throw new Error(`${what} ${JSON.stringify(prefix)} holds . or .. segments`);
  const path = target.path;
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/** `Example.COM:8443` → `example.com`, `::1` and `[::1]:80` → `[::1]`, `example.com.` → `example.com`. */
function canonicalHost(host: string, what: string): string {
  const lower = host.trim().toLowerCase();
  let name: string;
  if (lower.startsWith('[')) {
    const close = lower.indexOf(']');
    if (close === -1) throw new Error(`${what} ${JSON.stringify(host)} has no closing ]`);
    name = lower.slice(0, close + 1);
  } else if (lower.indexOf(':') !== lower.lastIndexOf(':')) {
    name = `[${lower}]`; // a bare IPv6 literal; the Host header always brackets it
  } else {
    const colon = lower.indexOf(':');
    name = colon === -1 ? lower : lower.slice(0, colon);
    if (name.endsWith('.')) name = name.slice(0, -1);
  }
  if (name === '' || name === '[]') throw new Error(`${what} ${JSON.stringify(host)} is empty`);
  return name;
}

/**
 * Where the host name in a Host header value ends: after `]` for an IPv6
 * literal, else before the port, and before a trailing dot (`example.com.` is
 * `example.com`). -1 when the value cannot be a host.
 */
function hostnameEnd(host: string): number {
  if (host.charCodeAt(0) === 0x5b) {
    const close = host.indexOf(']');
    return close === -1 ? -1 : close + 1;
  }
  const colon = host.indexOf(':');
  let end = colon === -1 ? host.length : colon;
  if (end > 0 && host.charCodeAt(end - 1) === 0x2e) end -= 1;
  return end;
}

/** Whether `path` starts with a lower-case `prefix`, ASCII case ignored. */
function startsWithFolded(path: string, prefix: string): boolean {
  return path.length >= prefix.length && equalsFolded(path, prefix, prefix.length);
}

/** ASCII case-insensitive comparison of `host[0, end)` with a lower-case name. */
function sameHost(expected: string, host: string, end: number): boolean {
  return end === expected.length && equalsFolded(host, expected, end);
}

/** Whether `text[0, length)` is `lower[0, length)` with ASCII case ignored, without lower-casing a copy. */
function equalsFolded(text: string, lower: string, length: number): boolean {
  for (let i = 0; i < length; i++) {
    let c = text.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if (c !== lower.charCodeAt(i)) return false;
  }
  return true;
}
