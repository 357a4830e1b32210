// The gateway endpoints' error handler: every error that reaches Fastify
// leaves as the response error-response.ts renders for it. Client errors go
// out as they are; server errors go out generic, with the detail in the log.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { renderError, toGatehouseError } from './error-response.js';
import { gatehouseError, type GatehouseError } from './errors.js';

/** The Fastify adapter of the one error writer (X-Request-Id is already on the reply). */
export function sendError(reply: FastifyReply, error: GatehouseError): FastifyReply {
  const { status, headers, body } = renderError(error);
  return reply.code(status).headers(headers).send(body);
}

async function errorHandlerPlugin(app: FastifyInstance): Promise<void> {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const gatehouse = toGatehouseError(error);
    if (gatehouse.expose) {
      request.log.info({ code: gatehouse.code, reason: gatehouse.reason }, 'request refused');
    } else {
      request.log.error({ err: gatehouse.cause ?? gatehouse, code: gatehouse.code }, 'request failed');
    }
    return sendError(reply, gatehouse);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, gatehouseError('route_not_found')));
}

export const errorHandler = fp(errorHandlerPlugin, { name: 'gatehouse-error-handler', fastify: '5.x' });
