// WebSocket upgrades: routed, normalised and authenticated exactly like any
// proxied request, then tunnelled by http-proxy. Browsers cannot set an
// Authorization header on a WebSocket, so the token may also come as a
// subprotocol `gatehouse.bearer.<token>` (stripped before forwarding; offer
// your real subprotocol beside it; offered alone, it is the one accepted, as
// browsers require one back). A tunnel is closed when its session is revoked,
// unless the route says otherwise when its token expires, and, public routes'
// too, when the gateway stops. The upstream handshake has the route's connect
// and response timeouts, which http-proxy does not apply to upgrades.
import type { ClientRequest, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import httpProxy from 'http-proxy';
import type { Logger } from 'pino';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import { bearerToken } from '../auth/bearer.js';
import type { Principal } from '../auth/principal.js';
import { toGatehouseError, writeErrorToSocket } from '../http/error-response.js';
import { gatehouseError } from '../http/errors.js';
import { isGatewayPath } from '../http/gateway-paths.js';
import { redactUrl } from '../observability/logger.js';
import { requestId as requestIdOf } from '../observability/request-id.js';
import type { ProxyRoutes } from './proxy-routes.js';
import { resolveRoute, type CompiledRoute } from './route-table.js';
import { CONNECT_TIMEOUT, RESPONSE_TIMEOUT, UpstreamTimeoutError, isConnectFailure, upstreamError } from './upstream-errors.js';
import type { HeaderPolicy } from './upstream-headers.js';
import type { UpstreamPool, UpstreamTarget } from './upstream-pool.js';

export const SUBPROTOCOL_TOKEN_PREFIX = 'gatehouse.bearer.';

export interface WebSocketProxyOptions {
  routes: () => ProxyRoutes;
  bearer: BearerAuthenticator;
  headers: HeaderPolicy;
  logger: Logger;
}

interface Tunnel {
  client: Duplex;
  route: CompiledRoute;
  requestId: string;
  /** As the client sent it, for the log. */
  url: string;
  started: number;
  /** The token subprotocol exactly as offered, when it was the only subprotocol offered. */
  echoProtocol: string | undefined;
  pool: UpstreamPool;
  target: UpstreamTarget;
  sub?: string;
  /** The handshake with the upstream, until it answers. */
  proxyReq?: ClientRequest;
  upstream?: Duplex;
  /** 101 once tunnelled; the refusal's status otherwise. */
  status?: number;
  sid?: string;
  expiryTimer?: NodeJS.Timeout;
}

const TUNNEL = Symbol('gatehouse.tunnel');
type TunnelledRequest = IncomingMessage & { [TUNNEL]?: Tunnel };

/** The longest a timer may wait (setTimeout's 32-bit limit). */
const MAX_TIMER_MS = 2_147_483_647;

export class WebSocketProxy {
  readonly #options: WebSocketProxyOptions;
  readonly #proxy = httpProxy.createProxyServer({ xfwd: false, prependPath: false, changeOrigin: false, ws: true });
  /** Every tunnel from its handshake with the upstream until its client socket closes, public routes' too. */
  readonly #tunnels = new Set<Tunnel>();
  readonly #bySession = new Map<string, Set<Tunnel>>();
  readonly #stopListening: () => void;
  #closed = false;

  constructor(options: WebSocketProxyOptions) {
    this.#options = options;
    this.#stopListening = options.bearer.onSessionEnded((sid) => this.#closeSession(sid));
    // Runs before http-proxy's own listeners on the upstream handshake.
    this.#proxy.on('proxyReqWs', (proxyReq, req) => {
      const tunnel = (req as TunnelledRequest)[TUNNEL];
      if (!tunnel) return;
      tunnel.proxyReq = proxyReq;
      // http-proxy applies no timeout to an upgrade: an upstream that accepts
      // the connection and never answers would hold the client forever.
      const { connectTimeoutMs, responseTimeoutMs } = tunnel.route.config;
      let timer: NodeJS.Timeout | undefined;
      let answered = false;
      const arm = (code: typeof CONNECT_TIMEOUT | typeof RESPONSE_TIMEOUT, ms: number) => {
        clearTimeout(timer);
        if (!answered) timer = setTimeout(() => proxyReq.destroy(new UpstreamTimeoutError(code, ms)), ms);
      };
      const disarm = () => {
        answered = true;
        clearTimeout(timer);
      };
      arm(CONNECT_TIMEOUT, connectTimeoutMs);
      proxyReq.once('socket', (socket: Socket) => {
        if (socket.connecting) socket.once('connect', () => arm(RESPONSE_TIMEOUT, responseTimeoutMs));
        else arm(RESPONSE_TIMEOUT, responseTimeoutMs);
      });
      proxyReq.once('error', disarm);
      proxyReq.once('close', disarm);
      proxyReq.once('response', (res: IncomingMessage) => {
        disarm();
        tunnel.pool.markUp(tunnel.target);
        tunnel.status = res.statusCode;
      });
      proxyReq.once('upgrade', (res: IncomingMessage, upstreamSocket: Duplex) => {
        disarm();
        tunnel.pool.markUp(tunnel.target);
        tunnel.proxyReq = undefined;
        tunnel.status = 101;
        // Browsers fail a handshake that offered subprotocols and got none
        // back; the token's subprotocol was the only one offered, so it is
        // the one to accept (the client's own token, back to the client).
        if (tunnel.echoProtocol !== undefined && res.headers['sec-websocket-protocol'] === undefined) {
          res.headers['sec-websocket-protocol'] = tunnel.echoProtocol;
        }
        if (tunnel.client.destroyed) {
          upstreamSocket.destroy();
          return;
        }
        tunnel.upstream = upstreamSocket;
        // Both ends close together, however either goes.
        upstreamSocket.once('close', () => tunnel.client.destroy());
      });
    });
    // http-proxy reports tunnel failures here when no callback took them.
    this.#proxy.on('error', (error, _req, socket) => {
      options.logger.debug({ err: error }, 'websocket tunnel error');
      (socket as unknown as Duplex)?.destroy?.();
    });
  }

  get openTunnels(): number {
    return this.#tunnels.size;
  }

  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    const requestId = requestIdOf(req);
    const url = req.url ?? '/';
    const started = performance.now();
    let route: CompiledRoute | undefined;
    // Shutting down: the listener is closing, nothing new is tunnelled.
    if (this.#closed) {
      socket.destroy();
      return;
    }
    try {
      // Node hands every Upgrade request here; http-proxy would drop anything
      // but a WebSocket one without a word.
      if (req.method !== 'GET' || req.headers.upgrade?.toLowerCase() !== 'websocket') {
        throw gatehouseError('invalid_request', { reason: 'only WebSocket upgrades (GET, Upgrade: websocket) are proxied' });
      }
      // One snapshot for the whole upgrade: a reload while the token is
      // checked must not leave it with a route the new table does not know.
      const routes = this.#options.routes();
      const resolved = resolveRoute(routes.table, req.method, req.headers.host, url);
      const { target, upstreamPath } = resolved;
      if (isGatewayPath(target.path)) throw gatehouseError('route_not_found');
      route = resolved.route;
      const { token, protocols, echoProtocol } = tokenAndProtocols(req);
      const context = { routes, route, upstreamPath, protocols, echoProtocol, requestId, url, started };
      const refusal = { requestId, url, started, route };
      const proceed = (principal: Principal | null) => {
        try {
          this.#tunnel(req, socket, head, { ...context, principal });
        } catch (error) {
          this.#refuse(socket, error, refusal);
        }
      };
      if (route.config.auth === 'none') {
        proceed(null);
        return;
      }
      const checked = this.#options.bearer.authenticate(token ?? bearerToken(req.headers));
      if (checked instanceof Promise) checked.then(proceed, (error: unknown) => this.#refuse(socket, error, refusal));
      else proceed(checked);
    } catch (error) {
      this.#refuse(socket, error, { requestId, url, started, route });
    }
  };

  #tunnel(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    context: {
      routes: ProxyRoutes;
      route: CompiledRoute;
      upstreamPath: string;
      principal: Principal | null;
      protocols: string | undefined;
      echoProtocol: string | undefined;
      requestId: string;
      url: string;
      started: number;
    },
  ): void {
    if (socket.destroyed) return;
    if (this.#closed) {
      socket.destroy();
      return;
    }
    const { routes, route, upstreamPath, principal, protocols, echoProtocol, requestId, url, started } = context;
    const pool = routes.pool(route);
    const target = pool.pick(Date.now());
    if (!target) throw gatehouseError('upstream_unreachable', { reason: 'no upstream target is available' });
    const headers: OutgoingHttpHeaders = this.#options.headers.requestHeaders(req, {
      forwardAuthorization: route.config.forwardAuthorization,
      principal,
      requestId,
      host: req.headers.host ?? '',
    });
    headers.connection = 'Upgrade';
    headers.upgrade = req.headers.upgrade ?? 'websocket';
    if (protocols) headers['sec-websocket-protocol'] = protocols;
    else delete headers['sec-websocket-protocol'];
    req.headers = headers as IncomingMessage['headers'];
    req.url = upstreamPath;

    const tunnel: Tunnel = { client: socket, route, requestId, url, started, echoProtocol, pool, target };
    this.#tunnels.add(tunnel);
    if (principal) this.#track(tunnel, principal, route.config.closeWebSocketOnExpiry);
    socket.once('close', () => {
      this.#untrack(tunnel);
      // A client gone before the upstream answered: abandon the handshake.
      tunnel.proxyReq?.destroy();
      tunnel.upstream?.destroy();
      this.#accessLog(tunnel);
    });

    (req as TunnelledRequest)[TUNNEL] = tunnel;
    this.#proxy.ws(
      req,
      socket,
      head,
      { target: { protocol: target.protocol, hostname: target.hostname, host: target.hostname, port: target.port } } as httpProxy.ServerOptions,
      (error: Error) => {
        // Passive health as for HTTP: the next upgrades skip a target that refused.
        // (No retry here: http-proxy ends the client socket after this callback.)
        if (isConnectFailure(error)) pool.markDown(target, Date.now());
        // The client went first (its close abandoned the handshake): nothing to answer.
        if (socket.destroyed) return;
        const gatehouse = upstreamError(error);
        if (!gatehouse.expose) {
          this.#options.logger.error({ err: error, reqId: requestId, code: gatehouse.code, upstream: target.origin, route: route.name }, 'websocket upgrade failed');
        }
        tunnel.status ??= gatehouse.status;
        writeRefusal(socket, gatehouse, requestId);
      },
    );
  }

  #track(tunnel: Tunnel, principal: Principal, closeOnExpiry: boolean): void {
    tunnel.sid = principal.sid;
    tunnel.sub = principal.sub;
    let tunnels = this.#bySession.get(principal.sid);
    if (!tunnels) this.#bySession.set(principal.sid, (tunnels = new Set()));
    tunnels.add(tunnel);
    if (closeOnExpiry) {
      const ms = Math.max(0, Math.min(principal.expiresAtMs - Date.now(), MAX_TIMER_MS));
      tunnel.expiryTimer = setTimeout(() => {
        this.#options.logger.info({ sid: principal.sid, reqId: tunnel.requestId }, 'websocket closed: its token expired');
        close(tunnel);
      }, ms);
      tunnel.expiryTimer.unref();
    }
  }

  #untrack(tunnel: Tunnel): void {
    this.#tunnels.delete(tunnel);
    clearTimeout(tunnel.expiryTimer);
    if (!tunnel.sid) return;
    const tunnels = this.#bySession.get(tunnel.sid);
    tunnels?.delete(tunnel);
    if (tunnels?.size === 0) this.#bySession.delete(tunnel.sid);
  }

  #closeSession(sid: string): void {
    const tunnels = this.#bySession.get(sid);
    if (!tunnels) return;
    this.#options.logger.info({ sid, tunnels: tunnels.size }, 'websockets closed: their session ended');
    for (const tunnel of [...tunnels]) close(tunnel);
  }

  /** One line per upgrade, as the proxy's access log has per request; never the token. */
  #accessLog(tunnel: Tunnel): void {
    this.#options.logger.info(
      {
        reqId: tunnel.requestId,
        method: 'GET',
        url: redactUrl(tunnel.url),
        status: tunnel.status,
        route: tunnel.route.name,
        upstream: tunnel.target.origin,
        sub: tunnel.sub,
        durationMs: Math.round(performance.now() - tunnel.started),
      },
      'proxied websocket',
    );
  }

  #refuse(socket: Duplex, error: unknown, context: { requestId: string; url: string; started: number; route?: CompiledRoute }): void {
    const gatehouse = toGatehouseError(error);
    if (!gatehouse.expose) {
      this.#options.logger.error({ err: gatehouse.cause ?? gatehouse, reqId: context.requestId, code: gatehouse.code }, 'websocket upgrade failed');
    }
    this.#options.logger.info(
      {
        reqId: context.requestId,
        method: 'GET',
        url: redactUrl(context.url),
        status: gatehouse.status,
        route: context.route?.name,
        reason: gatehouse.expose ? gatehouse.reason : undefined,
        durationMs: Math.round(performance.now() - context.started),
      },
      'websocket upgrade refused',
    );
    writeRefusal(socket, gatehouse, context.requestId);
  }

  /** Closes every tunnel, public routes' included, and refuses upgrades still being checked. */
  close(): void {
    this.#closed = true;
    this.#stopListening();
    for (const tunnel of [...this.#tunnels]) close(tunnel);
    this.#proxy.close();
  }
}

function close(tunnel: Tunnel): void {
  tunnel.proxyReq?.destroy();
  tunnel.upstream?.destroy();
  tunnel.client.destroy();
}

/**
 * The token from a `gatehouse.bearer.<token>` subprotocol, the other
 * subprotocols to pass on, and the token's subprotocol to accept in their
 * stead when there are none.
 */
function tokenAndProtocols(req: IncomingMessage): { token: string | undefined; protocols: string | undefined; echoProtocol: string | undefined } {
  const header = req.headers['sec-websocket-protocol'];
  if (!header) return { token: undefined, protocols: undefined, echoProtocol: undefined };
  let token: string | undefined;
  let tokenProtocol: string | undefined;
  const rest: string[] = [];
  for (const entry of header.split(',')) {
    const protocol = entry.trim();
    if (protocol.startsWith(SUBPROTOCOL_TOKEN_PREFIX)) {
      token = protocol.slice(SUBPROTOCOL_TOKEN_PREFIX.length);
      tokenProtocol = protocol;
    } else if (protocol) rest.push(protocol);
  }
  return {
    token,
    protocols: rest.length > 0 ? rest.join(', ') : undefined,
    echoProtocol: rest.length === 0 ? tokenProtocol : undefined,
  };
}

/** Answers an upgrade that will not be tunnelled with an ordinary HTTP error response. */
function writeRefusal(socket: Duplex, error: unknown, requestId: string): void {
  writeErrorToSocket(socket, toGatehouseError(error), requestId);
}
