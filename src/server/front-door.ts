// Refusals answered from the request head, before a request is routed or its body parsed: 429 for an address the
// abuse guard refuses (unless its bearer token was admitted before), 503 `overloaded` for work without a credential
// known good while the load shedder says the loop is late (everything when later still), and the hashing queue's
// own 503 for a suspect's login when the suspects' lane is full.
//
// Invariants: each abuse refusal is a strike, shedding is not; every refusal is held as the tarpit says before it is
// answered; proxied requests are asked about only while some address is refused or load is shed.
// Why: docs/decisions/0001-refuse-floods-from-the-request-head.md
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import { gatehouseError, type GatehouseError } from '../core/errors.js';
import type { ClientAddress } from '../http/client-address.js';
import { oauthErrorOf, renderError, renderOAuthError, writeRenderedError } from '../http/error-response.js';
import { LOGIN_PATH, REFRESH_PATH, TOKEN_ENDPOINT_PATH } from '../http/gateway-paths.js';
import { hasBody } from '../http/request-body.js';
import type { AbuseGuard } from '../limits/abuse-guard.js';
import type { FairWorkQueue } from '../limits/fair-work-queue.js';
import type { LoadShedder } from '../limits/load-shedder.js';
import type { Metrics } from '../observability/metrics.js';
import { requestId } from '../observability/request-id.js';

export interface FrontDoorOptions {
  abuse: AbuseGuard;
  passwordHashing: FairWorkQueue;
  /** Load shedding on event-loop delay. */
  load: Pick<LoadShedder, 'shedsUnauthenticated' | 'shedsAll' | 'retryAfterS'>;
  bearer: Pick<BearerAuthenticator, 'admitsFromMemory'>;
  metrics: Pick<Metrics, 'shedRequests'>;
  clientAddress: ClientAddress;
}

export class FrontDoor {
  readonly #options: FrontDoorOptions;

  constructor(options: FrontDoorOptions) {
    this.#options = options;
  }

  /** Whether any address is refused at the head now, or load is shed: while neither, proxied requests skip `refuses`. */
  get active(): boolean {
    return this.#options.abuse.refusing !== 0 || this.#options.load.shedsUnauthenticated;
  }

  /** Answers the request from its head and returns true when it is refused; false: serve it. */
  refuses(req: IncomingMessage, res: ServerResponse): boolean {
    const { abuse, passwordHashing, bearer, clientAddress, load } = this.#options;
    const address = clientAddress.of(req);
    let error: GatehouseError;
    if (abuse.refuses(address)) {
      if (bearer.admitsFromMemory(req.headers)) return false;
      error = gatehouseError('too_many_requests', {
        reason: 'too many refused requests from this address',
        headers: { 'retry-after': String(abuse.retryAfterS) },
      });
    } else {
      const shed = load.shedsUnauthenticated ? this.#shed(req, address) : undefined;
      if (shed !== undefined) {
        this.#options.metrics.shedRequests.inc({ level: shed });
        const refusal = gatehouseError('overloaded', {
          reason: shed === 'all' ? 'the gateway is overloaded: every request waits' : 'the gateway is overloaded: work without a known credential waits',
          headers: { 'retry-after': String(load.retryAfterS) },
        });
        // Not the address's doing: no strike. Held all the same, so a flood that waits for its answers slows down.
        abuse.answerRefusal(address, () => answer(req, res, refusal), { strike: false, hold: 'always' });
        return true;
      }
      if (req.method !== 'POST' || !isLogin(req.url) || !passwordHashing.refusesSuspect(address)) return false;
      error = gatehouseError('login_queue_full', { headers: { 'retry-after': String(passwordHashing.retryAfterS) } });
    }
    abuse.answerRefusal(address, () => answer(req, res, error), { strike: true, hold: 'always' });
    return true;
  }

  /** While load is shed: the level that sheds the request (its metric label), undefined when it passes. */
  #shed(req: IncomingMessage, address: string): 'unauthenticated' | 'all' | undefined {
    const { load, abuse, bearer } = this.#options;
    // A password or refresh token to check: known good only from an address with a recent success (never a suspect).
    const known =
      req.method === 'POST' && isCredentialEndpoint(req.url)
        ? abuse.laneOf(address) === 0
        : req.headers.authorization === undefined || bearer.admitsFromMemory(req.headers);
    if (!known) return 'unauthenticated';
    return load.shedsAll ? 'all' : undefined;
  }
}

function isLogin(url: string | undefined): boolean {
  return isPath(url, LOGIN_PATH);
}

/** Where a password or a refresh token is checked. */
function isCredentialEndpoint(url: string | undefined): boolean {
  return isPath(url, LOGIN_PATH) || isPath(url, REFRESH_PATH) || isPath(url, TOKEN_ENDPOINT_PATH);
}

function isPath(url: string | undefined, path: string): boolean {
  return url === path || (url !== undefined && url.startsWith(`${path}?`));
}

/** The refusal, in the OAuth error format on the OAuth endpoints (RFC 6749 5.2), `$diagnoses` elsewhere. */
function answer(req: IncomingMessage, res: ServerResponse, error: GatehouseError): void {
  if (res.destroyed || res.headersSent) return;
  const id = requestId(req);
  const rendered = req.url?.startsWith('/oauth/') ? renderOAuthError(oauthErrorOf(error), id) : renderError(error, id);
  // A body the client is still sending is not read: the connection closes after the answer.
  writeRenderedError(res, rendered, hasBody(req) && !req.complete);
}
