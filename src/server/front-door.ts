// Refusals answered from the request head, before a request is routed or its
// body parsed, for addresses that keep sending work the gateway refuses
// (limits/abuse-guard.ts):
//
// - an address refused at the head gets 429 with Retry-After, held for a while
//   first (a tarpit: a flood that waits for each answer slows to its
//   connections per hold), unless its bearer token was admitted before (a
//   Map lookup): authenticated traffic from a shared address still flows;
// - a suspect address's login when the suspects' lane of the hashing queue is
//   full gets the queue's own 503, without its JSON body being parsed.
//
// Each refusal is itself a strike: a flood that goes on stays refused. The
// public listener calls `refuses` for every gateway endpoint, and for proxied
// requests only while some address is refused (a size test otherwise).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import { gatehouseError, type GatehouseError } from '../core/errors.js';
import type { ClientAddress } from '../http/client-address.js';
import { renderError } from '../http/error-response.js';
import { LOGIN_PATH } from '../http/gateway-paths.js';
import type { AbuseGuard } from '../limits/abuse-guard.js';
import type { FairWorkQueue } from '../limits/fair-work-queue.js';
import { requestId } from '../observability/request-id.js';

export interface FrontDoorOptions {
  abuse: AbuseGuard;
  hashing: FairWorkQueue;
  bearer: Pick<BearerAuthenticator, 'admitsFromMemory'>;
  clientAddress: ClientAddress;
  /** The Retry-After of the hashing queue's refusals. */
  hashingRetryAfterS: number;
}

export class FrontDoor {
  readonly #options: FrontDoorOptions;

  constructor(options: FrontDoorOptions) {
    this.#options = options;
  }

  /** Whether any address is refused at the head now: while none is, proxied requests skip `refuses`. */
  get active(): boolean {
    return this.#options.abuse.refusing !== 0;
  }

  /** Answers the request from its head and returns true when it is refused; false: serve it. */
  refuses(req: IncomingMessage, res: ServerResponse): boolean {
    const { abuse, hashing, bearer, clientAddress } = this.#options;
    const address = clientAddress.of(req);
    let error: GatehouseError;
    if (abuse.refuses(address)) {
      if (bearer.admitsFromMemory(req.headers)) return false;
      error = gatehouseError('too_many_requests', {
        reason: 'too many refused requests from this address',
        headers: { 'retry-after': String(abuse.retryAfterS) },
      });
    } else if (req.method === 'POST' && isLogin(req.url) && hashing.refusesSuspect(address)) {
      error = gatehouseError('login_queue_full', { headers: { 'retry-after': String(this.#options.hashingRetryAfterS) } });
    } else {
      return false;
    }
    abuse.strike(address);
    abuse.hold(address, () => answer(req, res, error));
    return true;
  }
}

function isLogin(url: string | undefined): boolean {
  return url === LOGIN_PATH || (url !== undefined && url.startsWith(`${LOGIN_PATH}?`));
}

/** The refusal, in the OAuth error format on the OAuth endpoints (RFC 6749 5.2), `$diagnoses` elsewhere. */
function answer(req: IncomingMessage, res: ServerResponse, error: GatehouseError): void {
  if (res.destroyed || res.headersSent) return;
  const id = requestId(req);
  const rendered = renderError(error, id);
  let { body } = rendered;
  const headers = { ...rendered.headers };
  if (req.url?.startsWith('/oauth/')) {
    body = JSON.stringify({ error: error.oauthError, error_description: error.reason });
    headers['content-length'] = Buffer.byteLength(body);
    headers['cache-control'] = 'no-store';
  }
  // A body the client is still sending is not read: the connection closes after the answer.
  const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
  if (hasBody && !req.complete) headers.connection = 'close';
  res.writeHead(error.status, headers);
  res.end(body);
}
