// The gateway endpoints' error handler: every error that reaches Fastify
// leaves as the response error-response.ts renders for it. Client errors go
// out as they are; server errors go out generic, with the detail in the log.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { renderError, renderOAuthError, toGatehouseError, type OAuthErrorObject } from './error-response.js';
import { gatehouseError, type GatehouseError } from '../core/errors.js';

/** The Fastify adapter of the one error writer (X-Request-Id is already on the reply). */
export function sendError(reply: FastifyReply, error: GatehouseError): FastifyReply {
  const { status, headers, body } = renderError(error);
  return reply.code(status).headers(headers).send(body);
}

/** The Fastify adapter for the OAuth endpoints' error objects (RFC 6749 5.2). */
export function sendOAuthError(reply: FastifyReply, error: OAuthErrorObject): FastifyReply {
  const { status, headers, body } = renderOAuthError(error);
  return reply.code(status).headers(headers).send(body);
}

/**
 * Fastify's `frameworkErrors` option: what its router refuses before any
 * route or hook runs (an escape it cannot decode, an overlong parameter)
 * would otherwise go out in Fastify's own JSON, not the diagnostics format.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const gatehouse = toGatehouseError(error);
  request.log.info({ code: gatehouse.code, reason: gatehouse.reason }, 'request refused');
  void sendError(reply, gatehouse);
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
