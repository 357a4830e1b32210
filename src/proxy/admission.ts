// Admission: the one step every proxied request and every WebSocket upgrade
// passes before anything goes upstream. The request target is normalised and
// refused when it plays a path trick, the route is matched, the bearer token
// is checked (the one bearer rule, auth/bearer-authenticator.ts), and the
// headers the upstream will see are built with the caller's identity. HTTP
// (proxy-handler.ts) and WebSocket (websocket.ts) both call this module, so
// what one lets through the other cannot refuse, and the other way round.
//
// It runs on the hot path: a token checked before is answered synchronously
// (no promise), and what admission finds is written into the caller's own
// record instead of an object of its own, so a request allocates nothing here.
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { requireTrustedProvider } from './provider-trust.js';
import type { QuotaGate, RateLimitAnswerFields, RouteGuard } from './plug-ins.js';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import type { Principal } from '../core/principal.js';
import { gatehouseError, isGatehouseError } from '../core/errors.js';
import type { ClientAddress } from '../http/client-address.js';
import { isGatewayPath } from '../http/gateway-paths.js';
import type { ProxyRoutes } from './proxy-routes.js';
import { resolveRoute, type CompiledRoute } from '../routing/route-table.js';
import type { HeaderPolicy } from './upstream-headers.js';
import type { RouteLimits } from '../limits/route-limits.js';
import type { AbuseGuard } from '../limits/abuse-guard.js';

export interface AdmissionOptions {
  /** The routes in force now (reloads swap them whole). */
  routes: () => ProxyRoutes;
  bearer: BearerAuthenticator;
  headers: HeaderPolicy;
  /** Whose address a public route's limit counts (the same reading as login throttling's). */
  clientAddress: ClientAddress;
  /** Counts requests of routes with a `rateLimit`; absent, no route is limited. */
  limits?: RouteLimits;
  /** Counts requests of routes with `quotas`; absent, no route has any. */
  quotas?: QuotaGate;
  /** Route rules (`authorize`) and read-only keys; absent, any caller the bearer check admits may pass. */
  authorization?: RouteGuard;
  /**
   * Told of each token a first check refused, by client address; the refusals
   * of an address that keeps sending them are held before they are answered (limits/abuse-guard.ts). Cached
   * tokens never reach it.
   */
  abuse?: Pick<AbuseGuard, 'answerRefusal'>;
}

/** What admission establishes; the caller's own record carries it (see `admit`). */
export interface Admitted {
  /** The routes the request was matched against: its pool comes from the same set, even if a reload lands meanwhile. */
  routes?: ProxyRoutes;
  route?: CompiledRoute;
  /** The normalised, rewritten path with the client's query. */
  upstreamPath?: string;
  /** Who is calling; null on an `auth: none` route. */
  principal?: Principal | null;
  /** Where the route's quotas stand for the caller: the answer carries them. */
  rateLimit?: RateLimitAnswerFields | undefined;
}

export class Admission {
  readonly #routes: () => ProxyRoutes;
  readonly #bearer: BearerAuthenticator;
  readonly #headers: HeaderPolicy;
  readonly #clientAddress: ClientAddress;
  readonly #limits: RouteLimits | undefined;
  readonly #quotas: QuotaGate | undefined;
  readonly #authorization: RouteGuard | undefined;
  readonly #abuse: AdmissionOptions['abuse'];

  constructor(options: AdmissionOptions) {
    this.#abuse = options.abuse;
    this.#limits = options.limits;
    this.#quotas = options.quotas;
    this.#authorization = options.authorization;
    this.#routes = options.routes;
    this.#bearer = options.bearer;
    this.#headers = options.headers;
    this.#clientAddress = options.clientAddress;
  }

  /**
   * Admits the request into `record`, or refuses it with a GatehouseError:
   * thrown when the answer is known at once, rejected otherwise. Returns
   * undefined when admission is complete (every refusal by route, path or
   * cached token, and every cached token's admission, is decided this way),
   * or a promise when the bearer check has to ask the store first.
   * `token`: the bearer token when it came some other way than the
   * Authorization header (a WebSocket subprotocol).
   */
  admit(req: IncomingMessage, record: Admitted, token?: string): Promise<void> | undefined {
    // One snapshot for the whole request: a reload while the token is checked
    // must not leave it with a route the new table does not know.
    const routes = this.#routes();
    record.routes = routes;
    const { route, target, upstreamPath } = resolveRoute(routes.table, req.method ?? 'GET', req.headers.host, req.url ?? '/');
    // A gateway endpoint reached through dot segments or doubled slashes is
    // not proxied (the gateway's own paths are never a backend's).
    if (isGatewayPath(target.path)) throw gatehouseError('invalid_request', { reason: 'path is not in canonical form' });
    record.route = route;
    record.upstreamPath = upstreamPath;
    // Only a route with a limit pays for it: the others stay synchronous.
    const limited = (route.config.rateLimit !== undefined && this.#limits !== undefined) || (route.config.quotas !== undefined && this.#quotas !== undefined);
    if (route.config.auth === 'none') {
      record.principal = null;
      return limited ? this.#takeLimits(route, null, req, record) : undefined;
    }
    const checked = this.#bearer.authenticateRequest(req, token, route.config.requireDpop);
    const method = req.method ?? 'GET';
    if (!(checked instanceof Promise)) {
      record.principal = checked;
      requireTrustedProvider(route, checked);
      this.#authorization?.check(route, method, checked, req);
      return limited ? this.#takeLimits(route, checked, req, record) : undefined;
    }
    return checked.then(
      (principal) => {
        record.principal = principal;
        requireTrustedProvider(route, principal);
        this.#authorization?.check(route, method, principal, req);
        return limited ? this.#takeLimits(route, principal, req, record) : undefined;
      },
      (error: unknown) => {
        const abuse = this.#abuse;
        // A bad DPoP proof counts as a bad token: each costs a signature check, and a flood of them (with one stolen token) is the same abuse.
        if (abuse === undefined || !isGatehouseError(error) || (error.code !== 'invalid_bearer_token' && error.code !== 'invalid_dpop_proof')) throw error;
        // A tarpit, as sshd delays a failed authentication: a client that keeps presenting bad tokens gets each 401 late.
        return new Promise<void>((_, reject) => abuse.answerRefusal(this.#clientAddress.of(req), () => reject(error), { strike: true, hold: 'earned' }));
      },
    );
  }

  /** Whether the route's rule (or a read-only key) still lets `principal` use `method` on `req`'s connection: open tunnels ask again when users change. */
  allows(route: CompiledRoute, method: string, principal: Principal, req: IncomingMessage): boolean {
    try {
      this.#authorization?.check(route, method, principal, req);
      return true;
    } catch {
      return false;
    }
  }

  /** The route's `rateLimit`, then its quotas (each only when the route has it). */
  async #takeLimits(route: CompiledRoute, principal: Principal | null, req: IncomingMessage, record: Admitted): Promise<void> {
    const address = this.#clientAddress.of(req);
    const { rateLimit, quotas } = route.config;
    if (rateLimit !== undefined && this.#limits !== undefined) {
      await this.#limits.take(route, rateLimit, principal === null ? `address:${address}` : `sub:${principal.sub}`);
    }
    if (quotas !== undefined && this.#quotas !== undefined) record.rateLimit = await this.#quotas.take(route, principal, address);
  }

  /**
   * The headers to send upstream for an admitted request: the client's,
   * cleaned of hop-by-hop, spoofed identity and untrusted forwarding headers,
   * with the gateway's identity headers for its principal.
   */
  upstreamHeaders(req: IncomingMessage, admitted: Admitted, requestId: string): OutgoingHttpHeaders {
    return this.#headers.requestHeaders(req, {
      forwardAuthorization: admitted.route?.config.forwardAuthorization ?? false,
      principal: admitted.principal ?? null,
      requestId,
      host: req.headers.host ?? '',
      assertion: admitted.route?.config.identityAssertion,
      routeName: admitted.route?.name,
    });
  }
}
