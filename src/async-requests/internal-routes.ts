// How backend services report the outcome of a request they accepted with a
// 202: PUT /internal/v1/requests/<id>/status {"status": "completed" | "failed"}
// on the ADMIN listener (never the public one), with the service credential
// of `requests.serviceToken` as a bearer token (or, while backends move to a
// new one, `requests.serviceTokenPrevious`: docs/operations/rotations.md).
//
// The answer tells the caller what happened, so it can retry safely: 200
// `applied` or `already_applied` (an idempotent repeat) once the change is
// kept as surely as a 202's record (request-tracker.ts), 409 when the request
// ended the other way already (a terminal state never changes), 404 for an
// unknown id, 503 when the store is down (retry later).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { gatehouseError } from '../core/errors.js';
import { INTERNAL_STATUS_PATH } from '../http/gateway-paths.js';
import { acceptJsonBodiesOnly } from '../http/json-body.js';
import type { TerminalStatus } from '../store/store.js';
import { normaliseRequestId } from './id-format.js';
import type { RequestTracker } from './request-tracker.js';

export interface InternalRoutesOptions {
  tracker: RequestTracker;
  /** `requests.serviceToken`; absent, every call is refused. */
  serviceToken: string | undefined;
  /** `requests.serviceTokenPrevious`: also accepted, while backends move to the current one. */
  serviceTokenPrevious?: string | undefined;
  bodyLimitBytes: number;
  logger: Logger;
}

const SERVICE_CHALLENGE = 'Bearer realm="gatehouse-internal"';
const BEARER = /^Bearer +(\S{1,4096}) *$/i;

export async function internalRoutes(app: FastifyInstance, options: InternalRoutesOptions): Promise<void> {
  const { tracker, bodyLimitBytes } = options;
  // Digests of equal length, so the comparison takes the same time whatever
  // the length or content of the guess; both are compared on every call (an
  // unset previous one as a digest nobody can present), so the time does not
  // tell which one matched either.
  const expected = options.serviceToken === undefined ? undefined : digest(options.serviceToken);
  const previous = options.serviceTokenPrevious === undefined ? randomBytes(32) : digest(options.serviceTokenPrevious);
  if (expected === undefined) {
    options.logger.warn(
      'no requests.serviceToken (GATEHOUSE_SERVICE_TOKEN) is configured: the internal status API refuses every call, so backends cannot report outcomes',
    );
  }
  acceptJsonBodiesOnly(app);

  // Before the body is read: an unauthenticated caller costs no parsing.
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const given = BEARER.exec(request.headers.authorization ?? '')?.[1];
    // Compared even when absent (against a digest of nothing), so a missing
    // credential takes as long as a wrong one.
    const presented = digest(given ?? '');
    const current = expected !== undefined && timingSafeEqual(presented, expected);
    const former = timingSafeEqual(presented, previous);
    const matches = expected !== undefined && (current || former) && given !== undefined;
    if (!matches) {
      throw gatehouseError('invalid_service_credential', { headers: { 'www-authenticate': SERVICE_CHALLENGE } });
    }
  });

  app.put<{ Params: { id: string }; Body: unknown }>(INTERNAL_STATUS_PATH, { bodyLimit: bodyLimitBytes }, async (request) => {
    const status = terminalStatusOf(request.body);
    const id = normaliseRequestId(request.params.id);
    if (id === null) throw gatehouseError('request_not_found');
    const outcome = await tracker.transition(id, status, 'internal_api');
    switch (outcome) {
      case 'applied':
      case 'already_applied':
        return { id, status, outcome };
      case 'conflict':
        throw gatehouseError('status_transition_refused', { reason: `the request has ${status === 'completed' ? 'failed' : 'completed'} already` });
      case 'not_found':
        // Not a definitive 404 while the record may still be on its way from another instance.
        throw tracker.unknown();
    }
  });
}

function terminalStatusOf(body: unknown): TerminalStatus {
  const status = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as { status?: unknown }).status : undefined;
  if (status !== 'completed' && status !== 'failed') {
    throw gatehouseError('invalid_request', { reason: 'the body must be {"status": "completed" | "failed"}' });
  }
  return status;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
