// The gateway's two listeners. The public one: Fastify for the gateway's own
// endpoints, every other request straight to the proxy's handler. The admin
// one: health, readiness, metrics and the internal API, never public.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { requestId } from '../observability/request-id.js';
import { answerFrameworkError } from './error-handler.js';
import type { Drain } from './drain.js';
import { writeErrorToSocket } from './error-response.js';
import { gatehouseError } from './errors.js';
import { isGatewayPath } from './gateway-paths.js';

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** Fastify's default: longer than the idle timeout of common load balancers (60 s). */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

function answerUnparsableRequest(error: Error & { code?: string }, socket: Socket): void {
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  writeErrorToSocket(socket, gatehouseError('invalid_request', { reason: tooLarge ? 'request headers are too large' : 'the request is not valid HTTP/1.1' }));
}

/**
 * The public listener: Fastify serves the gateway's own endpoints; every
 * other request goes straight to the proxy's handler on the raw node:http
 * request, without Fastify's routing and hooks on the hot path.
 */
export function publicListener(config: Config, logger: Logger, proxy: RequestListener, drain: Drain): FastifyInstance {
  const { trustedProxies, apiBodyLimitBytes } = config.server;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    serverFactory: (fastify: RequestListener) => {
      const server = createServer((req, res) => {
        if (isGatewayPath(req.url ?? '/')) fastify(req, res);
        else proxy(req, res);
      });
      // Fastify sets these only on servers it creates itself. No overall
      // request deadline: a large upload may stream for as long as it flows.
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      server.requestTimeout = 0;
      return server;
    },
    // Requests Node's parser refuses never reach a handler; answer them in the diagnostics format too.
    clientErrorHandler: answerUnparsableRequest,
    frameworkErrors: answerFrameworkError,
    genReqId: requestId,
    // One access-log line per request (onResponse below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: trustedProxies.length > 0 ? [...trustedProxies] : false,
    bodyLimit: apiBodyLimitBytes,
    // A request that reached a connection still open while draining is
    // served (with `Connection: close`, below), not refused: it was sent
    // before the client could know.
    return503OnClosing: false,
    // Never coerce types: a numeric password must be refused, not turned into a string.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onSend', async (_request, reply) => {
    drain.closeAfter(reply.raw);
  });
  if (config.log.access) {
    app.addHook('onResponse', async (request, reply) => {
      request.log.info({ req: request, res: reply, responseTimeMs: Math.round(reply.elapsedTime * 100) / 100 }, 'request completed');
    });
  }
  return app;
}

/** The admin listener's Fastify; its routes are registered by the assembly. */
export function adminListener(logger: Logger): FastifyInstance {
  return Fastify({
    loggerInstance: logger.child({ listener: 'admin' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors: answerFrameworkError,
  });
}
