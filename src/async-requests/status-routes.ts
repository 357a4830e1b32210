// Spec 4.3: the status of an asynchronous request, at /api/v1/requests/<id>/status and /v1/requests/<id>/status, by
// GET and by POST (a body is ignored); `?wait=<seconds>` (bounded by `requests.maxWaitS`) holds a pending answer
// until the status changes on any instance, riding the store's change feed.
//
// Invariants: an unknown, expired, malformed or someone else's id all answer the same 404; a poll costs one store
// read (the bearer check is the proxy's cached one); a wait is held by its session and ends with its 401.
// Why: docs/decisions/0014-status-endpoint-not-probeable-long-polls-held.md
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import { bearerChallenge } from '../auth/bearer.js';
import type { Principal } from '../core/principal.js';
import { gatehouseError, type GatehouseError } from '../core/errors.js';
import { REQUEST_STATUS_PATH, SHORT_REQUEST_STATUS_PATH } from '../http/gateway-paths.js';
import type { Holding, HoldingEnd, SessionHoldings } from '../proxy/session-holdings.js';
import type { RequestStatus } from '../store/store.js';
import { normaliseRequestId } from './id-format.js';
import type { RequestTracker } from './request-tracker.js';
import type { UpstreamReconciler } from './upstream-reconciler.js';

export interface StatusRoutesOptions {
  bearer: BearerAuthenticator;
  /** What each session holds open: a wait ends with its session. */
  holdings: SessionHoldings;
  tracker: RequestTracker;
  reconciler: UpstreamReconciler;
  /** `requests.retryAfterS`: sent with every pending answer. */
  retryAfterS: number;
  /** `requests.maxWaitS`: longer waits are cut to it. */
  maxWaitS: number;
  /** A POST body is read (and discarded) up to this size. */
  bodyLimitBytes: number;
}

const STATUS_BODY = {
  type: 'object',
  properties: { status: { type: 'string', enum: ['pending', 'completed', 'failed'] } },
} as const;

/** Seconds, optionally with a fraction (tests and impatient clients); bounded in length so parsing costs nothing. */
const WAIT_SECONDS = /^\d{1,6}(\.\d{1,3})?$/;

export async function statusRoutes(app: FastifyInstance, options: StatusRoutesOptions): Promise<void> {
  const { bearer, holdings, tracker, reconciler, retryAfterS, maxWaitS, bodyLimitBytes } = options;

  // Spec 4.3 describes no body: whatever a POST carries (nothing, JSON, or
  // anything else) is read up to the limit and dropped, never refused as a
  // wrong media type or malformed JSON. This instance only (encapsulated).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: bodyLimitBytes }, (_request, _body, done) => done(null, undefined));
  // Fastify refuses a Content-Type it cannot parse (`''`, `;`) before any
  // parser runs; the type of a body that is dropped does not matter here.
  app.addHook('onRequest', async (request) => {
    delete request.raw.headers['content-type'];
  });

  async function status(request: FastifyRequest<{ Params: { '*': string }; Querystring: Record<string, unknown> }>, reply: FastifyReply) {
    const principal: Principal = await bearer.authenticateRequest(request.raw);
    // Even a 404 must not be kept by a cache: the same address answers 200 for its owner.
    reply.header('cache-control', 'no-store');
    const id = requestIdOf(request.params['*']);
    if (id === null) throw notFound();
    const waitMs = waitMsOf(request.query.wait, maxWaitS);

    // Opened before the record is read: a change between the read and the
    // wait is still heard.
    const watch = waitMs > 0 ? tracker.watch(id) : null;
    const clientGone = () => watch?.close();
    reply.raw.once('close', clientGone);
    let endedBy: HoldingEnd | undefined;
    const held: Holding | null =
      watch === null
        ? null
        : {
            kind: 'long poll',
            principal,
            end: (reason) => {
              endedBy = reason;
              watch.close();
            },
          };
    if (held !== null) holdings.add(held, false);
    try {
      const record = await tracker.get(id);
      if (record === null || record.sub !== principal.sub) throw tracker.unknown();
      let current: RequestStatus = await reconciler.reconcile(record);
      const deadline = Date.now() + waitMs;
      while (current === 'pending' && watch !== null) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) break;
        // With a status URL, the upstream is asked again at its interval while we wait.
        const slice = record.statusUrl === undefined ? remaining : Math.min(remaining, reconciler.intervalMs(record));
        const event = await watch.next(slice);
        if (event === 'completed' || event === 'failed') {
          current = event;
        } else if (event === 'recheck') {
          // Changes may have been missed while the feed was down: read again.
          const fresh = await tracker.get(id);
          if (fresh === null) throw tracker.unknown();
          current = fresh.status;
        } else if (watch.closed) {
          break;
        } else if (record.statusUrl !== undefined) {
          current = await reconciler.reconcile(record);
        }
      }
      if (endedBy !== undefined) throw gatehouseError('invalid_bearer_token', { reason: endedBy, headers: { 'www-authenticate': bearerChallenge(endedBy) } });
      if (current === 'pending') reply.header('retry-after', String(retryAfterS));
      return { status: current };
    } finally {
      if (held !== null) holdings.remove(held);
      reply.raw.off('close', clientGone);
      watch?.close();
    }
  }

  // Everything below the spec's two prefixes is parsed here, so every malformed id gets the same 404.
  for (const url of [REQUEST_STATUS_PATH, SHORT_REQUEST_STATUS_PATH]) {
    app.route({
      method: ['GET', 'POST'],
      url,
      bodyLimit: bodyLimitBytes,
      schema: { response: { 200: STATUS_BODY } },
      handler: status,
    });
  }
}

/** `<uuid>/status` → the normalised id; anything else → null. */
function requestIdOf(rest: string): string | null {
  const slash = rest.indexOf('/');
  if (slash < 0 || rest.slice(slash) !== '/status') return null;
  return normaliseRequestId(rest.slice(0, slash));
}

function waitMsOf(wait: unknown, maxWaitS: number): number {
  if (wait === undefined) return 0;
  if (typeof wait !== 'string' || !WAIT_SECONDS.test(wait)) {
    throw gatehouseError('invalid_request', { reason: 'wait must be a number of seconds' });
  }
  return Math.round(Math.min(Number(wait), maxWaitS) * 1000);
}

function notFound(): GatehouseError {
  return gatehouseError('request_not_found');
}
