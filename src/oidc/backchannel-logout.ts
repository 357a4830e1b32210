// OpenID Connect Back-Channel Logout 1.0, the relying party's side: the provider POSTs a `logout_token` when one of
// its sessions ends, and the gateway ends that session at once on every instance (Store.endProviderSession; what it
// holds open ends too, proxy/session-holdings.ts).
//
// Invariants: the token is checked as section 2.6 says (provider's key, `iss`, `aud`, recent `iat`, `exp`, the
// event, `sid`/`sub`, no `nonce`) and its `jti` is refused if seen before on any instance; a refused token changes
// nothing.
// Why: docs/decisions/0019-backchannel-logout-checks.md
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Logger } from 'pino';
import { providerActor, type AuditRecorder } from '../audit/recorder.js';
import type { ProviderSessionStore } from '../store/store.js';
import { isFetchFailure, keySetFailure } from './access-token-verifier.js';
import type { ProviderConnection } from './provider-connection.js';

export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/** A logout token issued longer ago than this (its `iat`) is refused; its `jti` is remembered this long, with the clock tolerance. */
export const LOGOUT_TOKEN_MAX_AGE_S = 300;

/** A logout token refused: the endpoint answers 400 with this description (section 2.8). */
export class LogoutTokenRefused extends Error {}

export interface BackchannelLogoutOptions {
  connection: Pick<ProviderConnection, 'connect'>;
  store: ProviderSessionStore;
  /** Our client id at the provider: the token's audience. */
  clientId: string;
  clockToleranceS: number;
  /** How long the ended session's tokens are refused (they run out by then): `identity.refreshTokenTtlS`. */
  endedSessionTtlS: number;
  logger: Logger;
  /** Records each session the provider ended (audit/). */
  trail?: AuditRecorder;
  /** Among several providers, this one's session prefix (provider-token-check.ts): its logout ends only its own sessions. */
  sessionPrefix?: string;
}

/** What the back-channel logout endpoint asks: one provider's check (below), or several providers' by issuer. */
export interface LogoutTokenReceiver {
  logout(logoutToken: string): Promise<{ sid: string; sub: string | undefined }>;
}

export class BackchannelLogout implements LogoutTokenReceiver {
  readonly #options: BackchannelLogoutOptions;

  constructor(options: BackchannelLogoutOptions) {
    this.#options = options;
  }

  /** Verifies the logout token and ends the session it names; throws LogoutTokenRefused for a bad token, a 502/503/504 GatehouseError otherwise. */
  async logout(logoutToken: string): Promise<{ sid: string; sub: string | undefined }> {
    const { connection, store, clientId, clockToleranceS, endedSessionTtlS, logger } = this.#options;
    const { client, verifier } = await connection.connect();
    const issuer = client.metadata.issuer;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(logoutToken, verifier.keys, {
        issuer,
        audience: clientId,
        clockTolerance: clockToleranceS,
        maxTokenAge: LOGOUT_TOKEN_MAX_AGE_S,
        requiredClaims: ['iat', 'jti'],
      }));
    } catch (error) {
      if (error instanceof joseErrors.JOSEError && !isFetchFailure(error)) throw new LogoutTokenRefused(`the logout token is not valid (${error.code})`);
      throw keySetFailure(error);
    }
    const events = payload.events as Record<string, unknown> | undefined;
    const event = events !== null && typeof events === 'object' ? events[BACKCHANNEL_LOGOUT_EVENT] : undefined;
    if (event === null || typeof event !== 'object') throw new LogoutTokenRefused('the logout token has no back-channel logout event');
    if (payload.nonce !== undefined) throw new LogoutTokenRefused('a logout token must not carry a nonce');
    const sid = nonEmpty(payload.sid);
    const sub = nonEmpty(payload.sub);
    if (sid === undefined && sub === undefined) throw new LogoutTokenRefused('the logout token names neither sid nor sub');
    // Sessions are known here by the provider's sid (what its tokens carry);
    // a token naming only the subject names no session we could end.
    if (sid === undefined) throw new LogoutTokenRefused('the logout token names no sid: only session logouts are supported');
    const jti = nonEmpty(payload.jti)!;
    if (!(await store.rememberLogoutToken(`${issuer}|${jti}`, (LOGOUT_TOKEN_MAX_AGE_S + 2 * clockToleranceS) * 1000))) {
      throw new LogoutTokenRefused('the logout token was used before');
    }
    await store.endProviderSession((this.#options.sessionPrefix ?? '') + sid, Date.now() + endedSessionTtlS * 1000);
    logger.info({ event: 'backchannel_logout', sid, sub }, 'the provider ended a session');
    this.#options.trail?.record({
      kind: 'session.ended',
      actor: providerActor(issuer),
      subject: sid,
      outcome: 'ok',
      details: { reason: 'backchannel_logout', ...(sub && { sub }) },
    });
    return { sid, sub };
  }
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
