// Who a proxied request is made by, as the bearer check established it.
import type { AuthMethod, TokenType } from './vocabulary.js';

export interface Principal {
  sub: string;
  username: string;
  sid: string;
  /** `Bearer` (access token) or `Refresh` (spec 5.9: a refresh token is a bearer token too). */
  tokenType: TokenType;
  method: AuthMethod;
  /** The API key the session was opened with (`method: 'api_key'`): revoking it ends the session's tokens and tunnels. */
  apiKeyId?: string;
  /** When the presented token expires, epoch ms: cached checks and WebSockets end then. */
  expiresAtMs: number;
  /** When the session began, epoch ms: a user disabled since then does not get it back by being enabled. */
  sessionStartedAtMs?: number;
  /** When the session itself ends, epoch ms: no tunnel outlives it, whatever its route says about token expiry. */
  sessionEndsAtMs: number;
  /** The level the session's login reached (the token's `acr`); undefined on a token without one. */
  acr?: string | undefined;
  /** When the user last proved themselves (the token's `auth_time`), epoch seconds; undefined when it does not say. */
  authTimeS?: number | undefined;
  /** The token's roles (its claim): what route rules weigh, less any taken away since (see authz/). */
  roles: readonly string[];
  /** The token's scopes; undefined: not narrowed by scope. */
  scopes: readonly string[] | undefined;
  /** A read-only API key's session: safe methods only. */
  readOnly: boolean;
  /**
   * The JWK SHA-256 thumbprint (RFC 7638) the token is bound to (its `cnf.jkt`,
   * DPoP, RFC 9449); undefined for a plain bearer token. A principal that
   * carries one was admitted only with a proof of possession of that key.
   */
  confirmationThumbprint?: string;
  /** With several identity providers: the name of the one whose token this is (`identity.providers[].name`); undefined with one. */
  provider?: string | undefined;
  /** The token's claims as verified (quotas key on them: `tenant`, `plan`); undefined where the mode keeps none. */
  claims?: Readonly<Record<string, unknown>> | undefined;
}
