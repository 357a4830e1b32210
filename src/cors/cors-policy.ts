// CORS (the Fetch standard's CORS protocol) for browser applications on other
// origins: the gateway's own endpoints follow `cors`, a proxied route its
// `routes[].cors`. A preflight is answered here, before any bearer check and
// never by a backend (browsers send it without credentials); an actual
// request from an allowed origin gets its response headers set on the
// response before anything answers it, so the proxy's answers, Fastify's and
// every error alike carry them. An origin that is not allowed gets no CORS
// header at all, and the browser keeps the answer from its script.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CorsConfig } from '../config/schema.js';
import { isGatewayPath } from '../http/gateway-paths.js';
import type { ProxyRoutes } from '../proxy/proxy-routes.js';
import { normalizeRequestTarget } from '../routing/request-target.js';

interface CompiledCors {
  config: CorsConfig;
  allows(origin: string): boolean;
  allowMethods: string;
  allowHeaders: ReadonlySet<string>;
  exposeHeaders: string;
}

const compiled = new WeakMap<CorsConfig, CompiledCors>();

function compile(config: CorsConfig): CompiledCors {
  let cors = compiled.get(config);
  if (cors === undefined) {
    const exact = new Set<string>();
    const suffixes: Array<{ scheme: string; suffix: string }> = [];
    for (const origin of config.allowedOrigins) {
      const wildcard = /^(https?:\/\/)\*(\..+)$/.exec(origin);
      if (wildcard) suffixes.push({ scheme: wildcard[1]!, suffix: wildcard[2]!.toLowerCase() });
      else exact.add(origin.toLowerCase());
    }
    cors = {
      config,
      allows(origin) {
        const lower = origin.toLowerCase();
        if (exact.has(lower)) return true;
        // `https://*.example.com`: one or more labels before the suffix, never the bare domain.
        return suffixes.some(
          ({ scheme, suffix }) =>
            lower.startsWith(scheme) &&
            lower.endsWith(suffix) &&
            lower.length > scheme.length + suffix.length &&
            !lower.slice(scheme.length, -suffix.length).includes('/'),
        );
      },
      allowMethods: config.allowedMethods.join(', '),
      allowHeaders: new Set(config.allowedHeaders.map((name) => name.toLowerCase())),
      exposeHeaders: config.exposedHeaders.join(', '),
    };
    compiled.set(config, cors);
  }
  return cors;
}

export class CorsPolicy {
  readonly #gateway: () => CorsConfig | undefined;
  readonly #routes: () => ProxyRoutes;

  /** Both read per request: a config reload swaps them (config-load/reload.ts). */
  constructor(options: { gateway: () => CorsConfig | undefined; routes: () => ProxyRoutes }) {
    this.#gateway = options.gateway;
    this.#routes = options.routes;
  }

  /**
   * Applies CORS to a request with an Origin: answers a preflight (true:
   * nothing else is to be done), or sets the response's CORS headers. False
   * for every request without an Origin, at the cost of one header lookup.
   */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const origin = req.headers.origin;
    if (origin === undefined) return false;
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
    const method = preflight ? String(req.headers['access-control-request-method']) : (req.method ?? 'GET');
    const config = this.#configFor(req, method);
    // Every answer to a request with an Origin may differ by it: caches must key on it.
    res.setHeader('vary', 'Origin');
    // No CORS configured here: the request goes on as ever (a public route's backend may answer CORS itself).
    if (config === undefined) return false;
    // Every answer here may differ by the Origin: caches must key on it.
    res.setHeader('vary', 'Origin');
    const cors = compile(config);
    if (!cors.allows(origin)) return preflight ? answerPreflight(res, undefined, origin, req) : false;
    if (preflight) return answerPreflight(res, cors, origin, req);
    res.setHeader('access-control-allow-origin', origin);
    if (config.allowCredentials) res.setHeader('access-control-allow-credentials', 'true');
    if (cors.exposeHeaders !== '') res.setHeader('access-control-expose-headers', cors.exposeHeaders);
    return false;
  }

  #configFor(req: IncomingMessage, method: string): CorsConfig | undefined {
    let path: string;
    try {
      path = normalizeRequestTarget(req.url ?? '/').path;
    } catch {
      return undefined; // the request is refused on its own later; no CORS for a path that is not one
    }
    if (isGatewayPath(path)) return this.#gateway();
    return this.#routes().table.match(method, req.headers.host, path)?.config.cors;
  }
}

/** 204 to a preflight; with the permissions only when `cors` allows the origin, the method and every header asked for. */
function answerPreflight(res: ServerResponse, cors: CompiledCors | undefined, origin: string, req: IncomingMessage): true {
  const method = String(req.headers['access-control-request-method']);
  const asked = String(req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  const allowed = cors !== undefined && cors.config.allowedMethods.includes(method as never) && asked.every((name) => cors.allowHeaders.has(name));
  if (allowed) {
    res.setHeader('access-control-allow-origin', origin);
    res.setHeader('access-control-allow-methods', cors.allowMethods);
    if (asked.length > 0) res.setHeader('access-control-allow-headers', asked.join(', '));
    if (cors.config.allowCredentials) res.setHeader('access-control-allow-credentials', 'true');
    res.setHeader('access-control-max-age', String(cors.config.maxAgeS));
  }
  res.setHeader('vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
  res.writeHead(204, { 'content-length': '0' });
  res.end();
  return true;
}
