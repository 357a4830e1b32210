// Who may use a route: after the bearer check has said who the caller is,
// the route's rule (or its rule for this method) says whether they may.
// Roles come from the token, less any the user has lost since it was signed
// (the identity provider's current grants), so taking a role away stops it
// on every instance as soon as the users file is read there, as disabling a
// user does; a role given takes effect with the next refresh. A read-only API
// key's tokens may only use the safe methods, on every route. A rule may also
// name the client certificates (mTLS) whose connections may use the route,
// and a login strong or recent enough (step-up, authentication-requirement.ts).
import type { IncomingMessage } from 'node:http';
import type { Principal } from '../core/principal.js';
import { gatehouseError, type GatehouseError } from '../core/errors.js';
import type { IdentityProvider } from '../users/identity-provider.js';
import { verifiedClientSubject } from '../proxy/client-certificate.js';
import type { RouteGuard } from '../proxy/plug-ins.js';
import type { CompiledRoute } from '../routing/route-table.js';
import { DEFAULT_ACR_MFA, DEFAULT_ACR_PASSWORD } from '../config/defaults.js';
import { unmetAuthentication } from './authentication-requirement.js';

/** RFC 9110 9.2.1: what a read-only key may still do. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

interface Rule {
  anyRole?: readonly string[] | undefined;
  allRoles?: readonly string[] | undefined;
  scopes?: readonly string[] | undefined;
  clientSubjects?: readonly string[] | undefined;
  acr?: readonly string[] | undefined;
  maxAgeS?: number | undefined;
}

export interface RouteAuthorizationOptions {
  /** The levels tokens carry, lowest first (`tokens.acr`, or a provider's `identity.acrValues`): a higher one meets a rule asking for a lower one. */
  acrRanks?: readonly string[];
  /** The clock `maxAgeS` is measured by, epoch ms. */
  now?: () => number;
}

/** RFC 6750 3.1: the challenge of a token that is valid but not enough. */
function insufficient(reason: string, scopes?: readonly string[]): GatehouseError {
  const scope = scopes === undefined ? '' : `, scope="${scopes.join(' ')}"`;
  return gatehouseError('insufficient_scope', {
    reason,
    headers: { 'www-authenticate': `Bearer realm="gatehouse", error="insufficient_scope"${scope}` },
  });
}

export class RouteAuthorization implements RouteGuard {
  readonly #identity: IdentityProvider;
  readonly #acrRanks: readonly string[];
  readonly #now: () => number;

  constructor(identity: IdentityProvider, options: RouteAuthorizationOptions = {}) {
    this.#identity = identity;
    this.#acrRanks = options.acrRanks ?? [DEFAULT_ACR_PASSWORD, DEFAULT_ACR_MFA];
    this.#now = options.now ?? (() => Date.now());
  }

  /** Throws a 403 GatehouseError when `principal` may not use `route` with `method` (from `req`'s connection); synchronous. */
  check(route: CompiledRoute, method: string, principal: Principal, req: IncomingMessage): void {
    if (principal.readOnly && !SAFE_METHODS.has(method)) throw insufficient('this API key may only read (GET, HEAD, OPTIONS)');
    const authorize = route.config.authorize;
    if (authorize === undefined) return;
    // HEAD is GET without the body: it follows GET's rule unless it has its own.
    const rule: Rule = authorize.methods?.[method as 'GET'] ?? (method === 'HEAD' ? authorize.methods?.GET : undefined) ?? authorize;
    if (rule.anyRole !== undefined || rule.allRoles !== undefined) {
      const held = this.#heldRoles(principal);
      if (rule.anyRole !== undefined && !rule.anyRole.some((role) => held.has(role))) {
        throw insufficient(`needs one of the roles ${rule.anyRole.join(', ')}`);
      }
      if (rule.allRoles !== undefined && !rule.allRoles.every((role) => held.has(role))) {
        throw insufficient(`needs the roles ${rule.allRoles.join(', ')}`);
      }
    }
    // A token not narrowed by scope (a password login) holds every scope.
    if (rule.scopes !== undefined && principal.scopes !== undefined && !rule.scopes.every((scope) => principal.scopes!.includes(scope))) {
      throw insufficient(`needs the scopes ${rule.scopes.join(', ')}`, rule.scopes);
    }
    // Read only when a rule names subjects: the certificate is the connection's, verified at its handshake.
    if (rule.clientSubjects !== undefined) {
      const subject = verifiedClientSubject(req);
      if (subject === undefined || !rule.clientSubjects.includes(subject)) {
        throw gatehouseError('insufficient_scope', { reason: 'needs a client certificate with one of the subjects this route names' });
      }
    }
    // Last: a 403 above is final, while this 401 is met by logging in again (RFC 9470).
    if (rule.acr !== undefined || rule.maxAgeS !== undefined) {
      const unmet = unmetAuthentication(rule, principal, this.#acrRanks, Math.floor(this.#now() / 1000));
      if (unmet !== undefined) throw unmet;
    }
  }

  /** The token's roles that the user (and the key) still have. */
  #heldRoles(principal: Principal): ReadonlySet<string> {
    const current = this.#identity.grants(principal)?.roles ?? [];
    return new Set(principal.roles.filter((role) => current.includes(role)));
  }
}
