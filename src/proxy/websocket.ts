// WebSocket upgrades: admitted exactly like any proxied request (admission.ts:
// route, path checks, bearer check, identity headers), then tunnelled on `ws`.
// The gateway opens the WebSocket to the upstream first and accepts the
// client's only once the upstream has accepted it, so every refusal — the
// gateway's own, or the upstream's — reaches the client as an HTTP answer.
// The token may also come as a subprotocol (websocket-subprotocols.ts). The
// two sides are websocket-upstream.ts and websocket-client.ts, joined by
// websocket-relay.ts; open tunnels are kept by session-holdings.ts, which ends
// each with its session. This module takes one upgrade from the request to
// the end of its tunnel.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { LookupFunction, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { responseHead, toGatehouseError, writeErrorToSocket } from '../http/error-response.js';
import { gatehouseError } from '../core/errors.js';
import { redactUrl } from '../observability/logger.js';
import type { CompiledRoute } from '../routing/route-table.js';
import { REQUEST_ID_HEADER, requestId as requestIdOf } from '../observability/request-id.js';
import { UNMATCHED_ROUTE, userAgentOf, type RequestTelemetry } from '../observability/request-telemetry.js';
import { traceContext, TRACEPARENT_HEADER, upstreamTraceparent, type TraceContext } from '../observability/trace-context.js';
import type { Admission, Admitted } from './admission.js';
import type { Holding, SessionHoldings } from './session-holdings.js';
import { isConnectFailure, upstreamError } from './upstream-errors.js';
import type { HeaderPolicy } from './upstream-headers.js';
import type { ClientAddress } from '../http/client-address.js';
import type { UpstreamTarget } from './upstream-pool.js';
import { ClientSide, extraHeaderLines } from './websocket-client.js';
import { endTunnel, relay } from './websocket-relay.js';
import { subprotocols } from './websocket-subprotocols.js';
import { dialUpstream, type UpstreamAnswer } from './websocket-upstream.js';

/** The largest message carried either way (`ws`'s default); a larger one closes the tunnel with 1009. */
const MAX_MESSAGE_BYTES = 100 * 1024 * 1024;
/** How long a side gets to answer a close frame before its connection is cut. */
const CLOSE_TIMEOUT_MS = 1_000;

export interface WebSocketProxyOptions {
  admission: Admission;
  /** What each session holds open: a tunnel ends with its session (and its token, as its route says). */
  holdings: SessionHoldings;
  /** For the upstream's answer to the client (its 101's extra headers, or its refusal). */
  headers: HeaderPolicy;
  /** The client's address for the access line: the one reading route limits and login throttling use. */
  clientAddress: ClientAddress;
  logger: Logger;
  /** The access line (the handshake's, then the tunnel's end) and the request metrics. */
  telemetry: RequestTelemetry;
  /** How upstream connections resolve host names: the DNS cache the HTTP engine shares. */
  lookup?: LookupFunction;
}

/** One upgrade, from the request to the end of its tunnel; admission writes into it too. */
interface Upgrade extends Admitted {
  readonly req: IncomingMessage;
  readonly socket: Duplex;
  readonly head: Buffer;
  readonly requestId: string;
  /** As the client sent it, for the log. */
  readonly url: string;
  readonly trace: TraceContext;
  readonly started: number;
  /** The client's subprotocols but the token's, for the upstream. */
  protocols: string[];
  /** The token's subprotocol, accepted in the upstream's stead when it was the only one offered. */
  echoProtocol: string | undefined;
  target?: UpstreamTarget;
  /** 101 once tunnelled, the upstream's status when it refused; unset when the client left first. */
  status?: number;
}

export class WebSocketProxy {
  readonly #options: WebSocketProxyOptions;
  readonly #clients: ClientSide;
  /** Upgrades waiting for the upstream's answer; ended with the gateway. */
  readonly #dialing = new Set<Upgrade>();
  readonly #holdings: SessionHoldings;
  #closed = false;

  constructor(options: WebSocketProxyOptions) {
    this.#options = options;
    this.#clients = new ClientSide({ maxPayload: MAX_MESSAGE_BYTES, closeTimeoutMs: CLOSE_TIMEOUT_MS });
    this.#holdings = options.holdings;
  }

  get openTunnels(): number {
    return this.#holdings.count('websocket');
  }

  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    // Shutting down: the listener is closing, nothing new is tunnelled.
    if (this.#closed) {
      socket.destroy();
      return;
    }
    const { token, protocols, echoProtocol } = subprotocols(req.headers);
    const upgrade: Upgrade = {
      req,
      socket,
      head,
      requestId: requestIdOf(req),
      url: req.url ?? '/',
      trace: traceContext(req.headers[TRACEPARENT_HEADER]),
      started: performance.now(),
      protocols,
      echoProtocol,
    };
    try {
      // Node hands every Upgrade request here, not only WebSocket ones.
      if (req.method !== 'GET' || req.headers.upgrade?.toLowerCase() !== 'websocket') {
        throw gatehouseError('invalid_request', { reason: 'only WebSocket upgrades (GET, Upgrade: websocket) are proxied' });
      }
      const pending = this.#options.admission.admit(req, upgrade, token);
      if (pending === undefined) this.#dial(upgrade);
      else
        pending.then(
          () => this.#dial(upgrade),
          (error: unknown) => this.#refuse(upgrade, error),
        );
    } catch (error) {
      this.#refuse(upgrade, error);
    }
  };

  /** Closes every tunnel, public routes' included, and gives up the handshakes under way. */
  close(): void {
    this.#closed = true;
    this.#holdings.endAll('websocket');
    for (const upgrade of this.#dialing) upgrade.socket.destroy();
    this.#clients.close();
  }

  #dial(upgrade: Upgrade): void {
    const { socket, route, routes, upstreamPath } = upgrade;
    if (socket.destroyed || route === undefined || routes === undefined || upstreamPath === undefined) return;
    if (this.#closed) {
      socket.destroy();
      return;
    }
    try {
      const pool = routes.pool(route);
      const target = pool.pick(Date.now());
      if (!target) throw gatehouseError('upstream_unreachable', { reason: 'no upstream target is available' });
      upgrade.target = target;
      const { connectTimeoutMs, responseTimeoutMs } = route.config;
      const headers = this.#options.admission.upstreamHeaders(upgrade.req, upgrade, upgrade.requestId);
      headers[TRACEPARENT_HEADER] = upstreamTraceparent(upgrade.trace);
      const handshake = dialUpstream(
        { target, path: upstreamPath, headers, protocols: upgrade.protocols, connectTimeoutMs, responseTimeoutMs, tls: pool.tls },
        { maxPayload: MAX_MESSAGE_BYTES, closeTimeoutMs: CLOSE_TIMEOUT_MS, lookup: this.#options.lookup },
      );
      // A client gone before the upstream answered: the handshake is abandoned.
      const clientGone = () => {
        this.#dialing.delete(upgrade);
        handshake.abandon();
        this.#accessLog(upgrade);
      };
      this.#dialing.add(upgrade);
      socket.once('close', clientGone);
      const answered = (answer: UpstreamAnswer) => {
        this.#dialing.delete(upgrade);
        socket.off('close', clientGone);
        pool.markUp(target);
        if (answer.accepted) this.#accept(upgrade, route, answer.upstream, answer.headers);
        else this.#passOn(upgrade, answer.response, handshake.abandon);
      };
      const failed = (error: unknown) => {
        // Passive health as for HTTP: the next upgrades skip a target that refused.
        // (No retry: the client's handshake is not replayed on another target.)
        if (isConnectFailure(error)) pool.markDown(target, Date.now());
        if (socket.destroyed) return;
        this.#dialing.delete(upgrade);
        socket.off('close', clientGone);
        this.#refuse(upgrade, upstreamError(error));
      };
      handshake.answer.then(answered, failed).catch((error: unknown) => this.#refuse(upgrade, error));
    } catch (error) {
      this.#refuse(upgrade, error);
    }
  }

  /** The upstream accepted: the client's WebSocket is accepted with the upstream's subprotocol, and the two are joined. */
  #accept(upgrade: Upgrade, route: CompiledRoute, upstream: WebSocket, upstreamHeaders: IncomingHttpHeaders): void {
    const { req, socket, head } = upgrade;
    if (socket.destroyed || this.#closed) {
      upstream.terminate();
      socket.destroy();
      return;
    }
    // Browsers fail a handshake that offered subprotocols and got none back;
    // the token's was the only one offered, so it is the one to accept.
    const client = this.#clients.accept(req, socket, head, {
      protocol: upstream.protocol || (upgrade.echoProtocol ?? false),
      headerLines: extraHeaderLines(this.#options.headers.responseHeaders(upstreamHeaders), upgrade.requestId),
      // The client's handshake itself is broken (a bad Sec-WebSocket-Key…): answered like any refusal.
      refused: (error) => this.#refuse(upgrade, gatehouseError('invalid_request', { reason: error.message, cause: error })),
    });
    // Refused (answered and logged just above), or the client's socket was gone.
    if (client === undefined) {
      upstream.terminate();
      if (upgrade.status === undefined) this.#accessLog(upgrade);
      return;
    }
    upgrade.status = 101;
    this.#accessLog(upgrade, 'open');
    relay(client, upstream);
    const accepted = client;
    const { principal } = upgrade;
    const tunnel: Holding = {
      kind: 'websocket',
      principal: principal ?? null,
      end: (reason) => endTunnel(accepted, upstream, reason),
      ...(principal && route.config.authorize !== undefined && { stillAllowed: () => this.#options.admission.allows(route, 'GET', principal, req) }),
    };
    this.#holdings.add(tunnel, route.config.closeWebSocketOnExpiry);
    accepted.once('close', () => {
      this.#holdings.remove(tunnel);
      this.#accessLog(upgrade, 'close');
    });
  }

  /** The upstream answered with something else than 101: the client gets that answer, as HTTP would. */
  #passOn(upgrade: Upgrade, response: IncomingMessage, abandon: () => void): void {
    const { socket } = upgrade;
    upgrade.status = response.statusCode;
    socket.once('close', () => {
      abandon();
      this.#accessLog(upgrade);
    });
    const headers = this.#options.headers.responseHeaders(response.headers);
    headers[REQUEST_ID_HEADER] = upgrade.requestId;
    headers.connection = 'close';
    socket.write(responseHead(response.statusCode ?? 502, headers));
    response.once('error', () => socket.destroy());
    response.pipe(socket);
  }

  #refuse(upgrade: Upgrade, error: unknown): void {
    const gatehouse = toGatehouseError(error);
    if (!gatehouse.expose) {
      this.#options.logger.error(
        { err: gatehouse.cause ?? gatehouse, reqId: upgrade.requestId, code: gatehouse.code, upstream: upgrade.target?.origin, route: upgrade.route?.name },
        'websocket upgrade failed',
      );
    }
    upgrade.status = gatehouse.status;
    if (gatehouse.expose) {
      this.#options.logger.debug({ reqId: upgrade.requestId, traceId: upgrade.trace.traceId, reason: gatehouse.reason }, 'websocket upgrade refused');
    }
    this.#accessLog(upgrade);
    writeErrorToSocket(upgrade.socket, gatehouse, upgrade.requestId);
  }

  /**
   * The upgrade's access line in the shape of every other request's: once
   * for the handshake (`open`: 101, or the refusal or the upstream's answer
   * the client got) and, for a tunnel, once when it ends (`close`, with its
   * whole duration). Metrics count the handshake only.
   */
  #accessLog(upgrade: Upgrade, event: 'open' | 'close' = 'open'): void {
    const { telemetry } = this.#options;
    const { req } = upgrade;
    telemetry.done({
      kind: 'websocket',
      event,
      requestId: upgrade.requestId,
      trace: upgrade.trace,
      clientAddress: telemetry.detailed ? this.#options.clientAddress.of(req) : undefined,
      method: 'GET',
      protocol: req.httpVersion,
      route: upgrade.route?.name ?? UNMATCHED_ROUTE,
      url: telemetry.detailed ? redactUrl(upgrade.url) : '',
      // 499 in the nginx manner: the client left before anything was answered.
      status: upgrade.status ?? 499,
      bytesIn: event === 'close' ? ((upgrade.socket as Partial<Socket>).bytesRead ?? 0) : 0,
      bytesOut: event === 'close' ? ((upgrade.socket as Partial<Socket>).bytesWritten ?? 0) : 0,
      durationMs: performance.now() - upgrade.started,
      upstream: upgrade.target?.origin,
      upstreamMs: undefined,
      subject: upgrade.principal?.sub,
      userAgent: telemetry.detailed ? userAgentOf(req) : undefined,
      completed: upgrade.status !== undefined,
    });
  }
}
