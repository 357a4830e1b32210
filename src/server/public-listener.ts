// The public listener: Fastify for the gateway's own endpoints, every other
// request straight to the proxy's handler.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { CorsPolicy } from '../cors/cors-policy.js';
import type { ClientAddress } from '../http/client-address.js';
import type { Drain } from '../http/drain.js';
import { answerFrameworkError } from '../http/error-handler.js';
import { isGatewayPath, isHealthPath } from '../http/gateway-paths.js';
import { lingerAfterEarlyAnswer } from '../http/linger.js';
import { limitConnections } from '../limits/connection-limits.js';
import { armRequestDeadline } from '../limits/request-deadline.js';
import { withClientAddress } from '../observability/logger.js';
import { redactUrl } from '../observability/redact-url.js';
import { requestId } from '../observability/request-id.js';
import { declaredLength, UNMATCHED_ROUTE, userAgentOf, type RequestTelemetry } from '../observability/request-telemetry.js';
import { traceOf } from '../observability/trace-context.js';
import { answerUnparsableRequest, arrivalTimeouts } from './arrival.js';
import type { FrontDoor } from './front-door.js';
import type { Metrics } from '../observability/metrics.js';
import { acceptCleartextHttp2 } from './cleartext-http2.js';
import { hstsValue, secureListener } from './secure-listener.js';
import { recordRoutes } from './route-record.js';
import { UntrustedForwarding } from './untrusted-forwarding.js';

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** The connection's bytesWritten when a gateway-endpoint request began. */
const bytesWrittenBefore = new WeakMap<IncomingMessage, number>();

/** Fastify's default: longer than the idle timeout of common load balancers (60 s). */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/**
 * The public listener: Fastify serves the gateway's own endpoints; every
 * other request goes straight to the proxy's handler on the raw node:http
 * request, without Fastify's routing and hooks on the hot path.
 */
export function publicListener(
  config: Config,
  logger: Logger,
  proxy: RequestListener,
  drain: Drain,
  telemetry: RequestTelemetry,
  clientAddress: ClientAddress,
  metrics: Pick<Metrics, 'untrustedForwardedHeaders'>,
  cors?: CorsPolicy,
  front?: FrontDoor,
): FastifyInstance {
  const { apiBodyLimitBytes, headersTimeoutMs, requestTimeoutMs, lingeringClose: lingering } = config.server;
  const { tls } = config.server;
  // `server.health.on: public`: the two health paths are the gateway's here too, and never shed (server/health.ts).
  const healthHere = config.server.health.on === 'public';
  const hsts = tls === undefined ? undefined : hstsValue(tls);
  // Forwarding headers from a peer not in server.trustedProxies: a warning per peer and a metric, for every request and upgrade.
  const forwarding = new UntrustedForwarding({ clientAddress, logger, metrics });
  const app = Fastify({
    // Only the address Fastify reports (https://): the server is ours (serverFactory).
    ...(tls !== undefined && { https: true as never }),
    // Its `req` serializer logs the client address as `clientAddress` reads it.
    loggerInstance: withClientAddress(logger, clientAddress) as FastifyBaseLogger,
    serverFactory: (fastify: RequestListener) => {
      // No listener-wide request deadline: a proxied upload has its route's
      // deadline and minimum rate (limits/body-guard.ts); the gateway's own
      // endpoints get theirs here.
      const handler: RequestListener = (req, res) => {
        forwarding.note(req);
        if (hsts !== undefined) res.setHeader('strict-transport-security', hsts);
        // A preflight is answered before anything else, without credentials; other requests get their CORS headers set.
        if (cors?.handle(req, res) === true) return;
        const health = healthHere && isHealthPath(req.url ?? '/');
        if (health || isGatewayPath(req.url ?? '/')) {
          // Refusals from the request head (server/front-door.ts), before the body is read: they linger too.
          if (!health && front?.refuses(req, res) === true) return lingerAfterEarlyAnswer(req, res, lingering);
          armRequestDeadline(req, res, requestTimeoutMs, () => String(res.getHeader('x-request-id') ?? requestId(req)));
          fastify(req, res);
          // Proxied requests ask the front door only while some address is refused.
        } else if (front?.active === true && front.refuses(req, res)) lingerAfterEarlyAnswer(req, res, lingering);
        else proxy(req, res);
      };
      let server: Server;
      if (tls !== undefined) server = secureListener(config.server, handler, KEEP_ALIVE_TIMEOUT_MS, logger).server as unknown as Server;
      else {
        server = createServer(arrivalTimeouts(headersTimeoutMs, 0), handler);
        // Fastify sets this only on servers it creates itself.
        server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
        if (config.server.http2.cleartext) acceptCleartextHttp2(server, handler, config.server.http2, KEEP_ALIVE_TIMEOUT_MS, logger);
      }
      // Upgrades go to 'upgrade' listeners, not the handler: this one only reads their heads; the WebSocket proxy's (app/gateway.ts) answers them.
      server.on('upgrade', forwarding.note);
      limitConnections(
        server,
        { maxConnections: config.server.maxConnections, maxConnectionsPerAddress: config.server.maxConnectionsPerAddress, clientAddress },
        logger.child({ listener: 'public' }),
      );
      return server;
    },
    // Requests Node's parser refuses never reach a handler; answer them in the diagnostics format too.
    clientErrorHandler: answerUnparsableRequest,
    frameworkErrors: answerFrameworkError,
    genReqId: requestId,
    // Every log line of a request carries its trace id (W3C Trace Context), continued or new.
    childLoggerFactory(parent, bindings, options, raw) {
      return parent.child({ ...bindings, traceId: traceOf(raw as IncomingMessage).traceId }, options);
    },
    // One access-log line per request (onResponse below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // No trustProxy: the client's address is `clientAddress`'s reading (http/client-address.ts), never request.ip.
    bodyLimit: apiBodyLimitBytes,
    // A request that reached a connection still open while draining is
    // served (with `Connection: close`, below), not refused: it was sent
    // before the client could know.
    return503OnClosing: false,
    // Never coerce types: a numeric password must be refused, not turned into a string.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
  });
  // A route outside the gateway's paths would never be reached: its requests go to the proxy.
  recordRoutes(app, (url) => isGatewayPath(url) || (healthHere && isHealthPath(url)));
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    bytesWrittenBefore.set(request.raw, request.raw.socket?.bytesWritten ?? 0);
  });
  app.addHook('onSend', async (request, reply) => {
    drain.closeAfter(reply.raw);
    // An answer before the body was read (a 413 on the declared length, a refusal from a hook): linger, then close.
    lingerAfterEarlyAnswer(request.raw, reply.raw, lingering);
  });
  // The same access line and request metrics as a proxied request.
  app.addHook('onResponse', async (request, reply) => {
    const raw = request.raw;
    telemetry.done({
      kind: 'gateway',
      requestId: request.id,
      trace: traceOf(raw),
      clientAddress: telemetry.detailed ? clientAddress.of(raw) : undefined,
      method: request.method,
      protocol: raw.httpVersion,
      // The route's pattern (`/api/v1/account/sessions/:id`, `/api/v1/requests/*`): bounded, never the raw path.
      route: request.routeOptions.url ?? UNMATCHED_ROUTE,
      url: telemetry.detailed ? redactUrl(request.url) : '',
      status: reply.statusCode,
      bytesIn: declaredLength(raw),
      bytesOut: raw.socket === null ? 0 : raw.socket.bytesWritten - (bytesWrittenBefore.get(raw) ?? 0),
      durationMs: reply.elapsedTime,
      upstreamMs: undefined,
      subject: undefined,
      userAgent: telemetry.detailed ? userAgentOf(raw) : undefined,
      completed: reply.raw.writableFinished,
    });
  });
  return app;
}
