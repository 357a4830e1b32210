// The one error handler: every error that reaches Fastify becomes a
// GatehouseError here and leaves as a `$diagnoses` body. Client errors go out
// as they are; server errors go out generic, with the detail in the log.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { gatehouseError, isGatehouseError, type GatehouseError } from './errors.js';
import { diagnosticsBody } from './diagnostics.js';

/** Fastify's own 4xx errors, translated into client-safe reasons. */
const FASTIFY_REASONS: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Content-Type must be application/json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'request body is too large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'the JSON body is empty',
  FST_ERR_CTP_INVALID_JSON_BODY: 'the body is not valid JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body',
  FST_ERR_CTP_INVALID_TYPE: 'Content-Type header is malformed',
  FST_ERR_BAD_URL: 'the URL is malformed',
  FST_ERR_MAX_PARAM_LENGTH: 'a path segment is too long',
  FST_ERR_ASYNC_CONSTRAINT: 'the request cannot be routed',
};

export function toGatehouseError(error: unknown): GatehouseError {
  if (isGatehouseError(error)) return error;
  const fastifyError = error as Partial<FastifyError> & { validation?: unknown };
  if (fastifyError?.validation) {
    return gatehouseError('invalid_request', { reason: fastifyError.message ?? 'the request does not match its schema', cause: error });
  }
  const code = fastifyError?.code;
  if (code && FASTIFY_REASONS[code]) {
    return gatehouseError('invalid_request', { reason: FASTIFY_REASONS[code], cause: error });
  }
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return gatehouseError('invalid_request', { cause: error });
  }
  return gatehouseError('internal_error', { cause: error });
}

export function sendError(reply: FastifyReply, error: GatehouseError): FastifyReply {
  return reply.code(error.status).headers(error.headers).type('application/json; charset=utf-8').send(diagnosticsBody(error));
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
