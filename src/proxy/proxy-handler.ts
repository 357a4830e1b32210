// The hot path: every request that is not one of the gateway's own endpoints.
// It runs on the raw node:http request, outside Fastify, so it pays only for
// what it does: admission (normalise and route, check the bearer token — a
// synchronous cache hit in the common case), rewrite headers, stream both ways.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { PassThrough, type Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { Drain } from '../http/drain.js';
import { toGatehouseError, writeErrorResponse } from '../http/error-response.js';
import { lingerAfterEarlyAnswer, type LingerBounds } from '../http/linger.js';
import { gatehouseError, type GatehouseError } from '../core/errors.js';
import { redactUrl } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { requestId as requestIdOf } from '../observability/request-id.js';
import { declaredLength, UNMATCHED_ROUTE, userAgentOf, type RequestTelemetry } from '../observability/request-telemetry.js';
import { traceContext, TRACEPARENT_HEADER, upstreamTraceparent } from '../observability/trace-context.js';
import type { Admission } from './admission.js';
import { HttpExchange as Exchange, type ExchangeContext } from './http-exchange.js';
import type { SessionHoldings } from './session-holdings.js';
import { guardBody } from '../limits/body-guard.js';
import { declaredLengthExceeds } from './body-limit.js';
import { hasBody } from '../http/request-body.js';
import type { ForwardingEngine, ResponseHead } from './engine.js';
import type { AcceptedAnswer } from './plug-ins.js';
import { isConnectFailure, tlsFailureCode, upstreamFailureKind } from './upstream-errors.js';
import type { HeaderPolicy } from './upstream-headers.js';
import type { ClientAddress } from '../http/client-address.js';
import type { UpstreamTarget } from './upstream-pool.js';

/** A busy route's Retry-After: in-flight requests last about as long as a response. */
const ROUTE_BUSY_RETRY_AFTER_S = 1;

export interface ProxyHandlerOptions {
  admission: Admission;
  /** For the response headers; the request's come from admission. */
  headers: HeaderPolicy;
  /** The client's address for the access line: the one reading route limits and login throttling use. */
  clientAddress: ClientAddress;
  engine: ForwardingEngine;
  logger: Logger;
  /** One access line (`log.access`) and the request metrics, when each request ends. */
  telemetry: RequestTelemetry;
  /** Upstream failures by kind. */
  metrics?: Metrics;
  /** Takes over every upstream 202 (spec 4.4); absent, 202s stream like any answer. */
  capture?: AcceptedAnswer;
  /** While the gateway stops, every answer closes its connection. */
  drain: Drain;
  /** How long and how much of a body refused before it was read is read and thrown away before the connection closes. */
  lingering: LingerBounds;
  /** What each session holds open: an exchange in progress ends with its session. */
  holdings: SessionHoldings;
}

export class ProxyHandler {
  readonly #options: ProxyHandlerOptions;
  readonly #holdings: SessionHoldings;
  readonly #context: ExchangeContext;

  constructor(options: ProxyHandlerOptions) {
    this.#options = options;
    this.#holdings = options.holdings;
    this.#context = { admission: options.admission, engine: options.engine };
  }

  /** The node:http request listener for proxied traffic. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    // Created whole (http-exchange.ts): what admission and forwarding fill in
    // later needs no property store of its own, and the registry of what
    // sessions hold open takes the exchange itself.
    const exchange = new Exchange(this.#context, req, res, requestIdOf(req), traceContext(req.headers[TRACEPARENT_HEADER]));
    // `on`, not `once`: a response closes once, and once's wrapper is an allocation and a removal per request.
    res.on('close', () => this.#done(exchange));
    try {
      const pending = this.#options.admission.admit(req, exchange);
      if (pending === undefined) this.#admitted(exchange);
      else {
        pending
          .then(
            () => this.#admitted(exchange),
            (error: unknown) => this.#fail(exchange, error),
          )
          // Never an unhandled rejection (it would take the process down).
          .catch((error: unknown) => this.#fail(exchange, error));
      }
    } catch (error) {
      this.#fail(exchange, error);
    }
  };

  #admitted(exchange: Exchange): void {
    const { route, routes, res, principal } = exchange;
    // Held by its session from now until it ends: its session's end ends it (a public route's is the drain's).
    if (principal !== null && route !== undefined && !res.destroyed) {
      this.#holdings.add(exchange, route.config.endExchangesOnExpiry);
      if (exchange.endedBy !== undefined) return;
    }
    const limit = route?.config.bodyLimitBytes;
    if (limit !== undefined && declaredLengthExceeds(exchange.req, limit)) throw gatehouseError('payload_too_large');
    if (route !== undefined && routes !== undefined) {
      const pool = routes.pool(route);
      // Only capped routes pay for the count (and its close listener).
      if (pool.maxInFlight !== Infinity) {
        if (!pool.tryAcquire()) throw gatehouseError('route_busy', { headers: { 'retry-after': String(ROUTE_BUSY_RETRY_AFTER_S) } });
        res.once('close', () => pool.release());
      }
    }
    this.#forward(exchange);
  }

  /** `failed`: the targets this request already failed to connect to (created on the first failure only). */
  #forward(exchange: Exchange, failed?: Set<UpstreamTarget>): void {
    const { req, res, route, routes, upstreamPath } = exchange;
    if (!route || !routes || upstreamPath === undefined || res.destroyed) return;
    const pool = routes.pool(route);
    const now = Date.now();
    const target = pool.pick(now, failed);
    if (!target) {
      this.#fail(exchange, gatehouseError('upstream_unreachable', { reason: 'no upstream target is available' }));
      return;
    }
    exchange.target = target;
    const { config } = route;
    const headers = this.#options.admission.upstreamHeaders(req, exchange, exchange.requestId);
    // This hop is the upstream's parent in the trace (W3C Trace Context); tracestate travels as sent.
    headers[TRACEPARENT_HEADER] = upstreamTraceparent(exchange.trace);
    const body = hasBody(req)
      ? guardBody(
          req,
          { limitBytes: config.bodyLimitBytes, deadlineMs: config.requestDeadlineMs, minBytesPerS: config.minBodyBytesPerS, windowMs: config.bodyRateWindowMs },
          exchange.started,
          (error) => this.#fail(exchange, error),
        )
      : req;

    const { engine } = this.#options;
    const forwardOptions = {
      target,
      path: upstreamPath,
      headers,
      body,
      connectTimeoutMs: config.connectTimeoutMs,
      responseTimeoutMs: config.responseTimeoutMs,
      tls: pool.tls,
    };
    exchange.upstreamStarted = performance.now();
    engine
      .forward(req, res, forwardOptions, (head) => {
        exchange.upstreamMs = performance.now() - (exchange.upstreamStarted ?? exchange.started);
        pool.markUp(target);
        return this.#sink(exchange, head);
      })
      .catch((error: unknown) => {
        // Whatever throws in here answers this request; it must never become
        // an unhandled rejection.
        try {
          this.#upstreamFailed(exchange, error, failed);
        } catch (thrown) {
          this.#fail(exchange, thrown);
        }
      });
  }

  /** The engine gave up on the exchange: answered, or sent to the route's next target when nothing reached this one. */
  #upstreamFailed(exchange: Exchange, error: unknown, failed: Set<UpstreamTarget> | undefined): void {
    const { req, res, route, routes, target } = exchange;
    // The client went away, or was answered already (a body over the
    // limit): the engine abandoned the upstream request, there is
    // nobody to answer, and the target is not to blame.
    if (res.destroyed || res.writableEnded || route === undefined || routes === undefined || target === undefined) return;
    const pool = routes.pool(route);
    this.#options.metrics?.upstreamFailures.inc({ route: route.name, kind: upstreamFailureKind(error) });
    const tlsCode = tlsFailureCode(error);
    if (tlsCode !== undefined) {
      // Never a retry in the clear: the request fails (502), and the operator is told which route and why.
      this.#options.logger.error(
        { reqId: exchange.requestId, route: route.name, upstream: target.origin, tlsCode },
        `upstream TLS failed on route ${route.name}: ${tlsCode}`,
      );
    }
    if (!isConnectFailure(error)) {
      this.#fail(exchange, error);
      return;
    }
    pool.markDown(target, Date.now());
    this.#options.logger.warn(
      { reqId: exchange.requestId, traceId: exchange.trace.traceId, upstream: target.origin, route: route.name },
      'upstream target marked down',
    );
    // Nothing reached the target: a request without a body can go to the next one.
    const tried = failed ?? new Set<UpstreamTarget>();
    tried.add(target);
    if (!hasBody(req) && tried.size < pool.targets.length) this.#forward(exchange, tried);
    else this.#fail(exchange, error);
  }

  /**
   * Where the engine writes the response body: the client's response itself,
   * its head written first; or, for a 202 the capture may record, a stream
   * the capture reads like any upstream body.
   */
  #sink(exchange: Exchange, head: ResponseHead): Writable {
    const { res, route, target } = exchange;
    if (res.headersSent || res.destroyed) return res; // the engine sees it closed and aborts
    this.#options.drain.closeAfter(res);
    const headers: OutgoingHttpHeaders = this.#options.headers.responseHeaders(head.headers);
    headers['x-request-id'] = exchange.requestId;
    const rateLimit = exchange.rateLimit;
    if (rateLimit !== undefined) {
      headers['ratelimit-policy'] = rateLimit.policy;
      headers.ratelimit = rateLimit.state;
    }
    // An accepted asynchronous request: recorded before the client sees it.
    if (head.statusCode === 202 && this.#options.capture !== undefined && route !== undefined && target !== undefined) {
      const body = new PassThrough();
      this.#options.capture.respond(res, { ...head, body }, headers, {
        route,
        upstream: target.origin,
        principal: exchange.principal,
        reqId: exchange.requestId,
      });
      return body;
    }
    res.writeHead(head.statusCode, headers);
    return res;
  }

  #fail(exchange: Exchange, error: unknown): void {
    const { res, req } = exchange;
    const gatehouse: GatehouseError = toGatehouseError(error);
    if (!gatehouse.expose) {
      this.#options.logger.error(
        {
          err: gatehouse.cause ?? gatehouse,
          reqId: exchange.requestId,
          traceId: exchange.trace.traceId,
          code: gatehouse.code,
          upstream: exchange.target?.origin,
        },
        'proxied request failed',
      );
    }
    if (res.headersSent || res.destroyed) {
      res.destroy();
      return;
    }
    this.#options.drain.closeAfter(res);
    const early = hasBody(req) && !req.readableEnded;
    // Refused before its body was read (admission, a limit): the client may still be sending it.
    if (early) lingerAfterEarlyAnswer(req, res, this.#options.lingering);
    writeErrorResponse(res, gatehouse, exchange.requestId, early);
  }

  #done(exchange: Exchange): void {
    const { req, res, route, principal } = exchange;
    if (principal !== null) this.#holdings.remove(exchange);
    const { telemetry } = this.#options;
    telemetry.done({
      kind: 'proxy',
      requestId: exchange.requestId,
      trace: exchange.trace,
      // Worked out only for the line: metrics do not need it.
      clientAddress: telemetry.detailed ? this.#options.clientAddress.of(req) : undefined,
      method: req.method ?? 'GET',
      protocol: req.httpVersion,
      route: route?.name ?? UNMATCHED_ROUTE,
      url: telemetry.detailed ? redactUrl(exchange.url) : '',
      status: res.statusCode,
      bytesIn: declaredLength(req),
      bytesOut: req.socket.bytesWritten - exchange.bytesWrittenBefore,
      durationMs: performance.now() - exchange.started,
      upstream: exchange.target?.origin,
      upstreamMs: exchange.upstreamMs,
      subject: principal?.sub,
      userAgent: telemetry.detailed ? userAgentOf(req) : undefined,
      completed: res.writableFinished,
    });
  }
}
