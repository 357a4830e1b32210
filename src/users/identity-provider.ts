// Who a user is. Login, refresh, the token endpoint and the bearer rule talk
// only to this interface: the local users file answers it, or, fronting an
// OpenID Provider, that provider's tokens do (oidc/provider-identity.ts).
import type { AuthMethod } from '../core/vocabulary.js';
import type { KeyScope } from './key-scope.js';

export interface Identity {
  /** Stable user id: the token's `sub`. Never reused for another user. */
  sub: string;
  /** The login name: the token's `preferred_username`. */
  username: string;
  method: AuthMethod;
  /** Set when `method` is `api_key`. */
  apiKeyId?: string;
  /** The user's roles (and groups), already narrowed by the key's scope for an API-key login. */
  roles?: readonly string[];
  groups?: readonly string[];
  /** Set for a login with a scoped API key: its tokens are limited the same way. */
  keyScope?: KeyScope;
}

/** What a provider may weigh besides the credentials. */
export interface AuthenticateOptions {
  /** The client's address as the listener trusts it: expensive checks are shared fairly between addresses. */
  clientAddress?: string;
}
/** What a session may do now: its user's roles, narrowed by the scope of the API key it was opened with. */
export interface Grants {
  roles: readonly string[];
  groups: readonly string[];
  /** The key's scopes; undefined: not narrowed by scope (a password login holds every scope). */
  scopes: readonly string[] | undefined;
  /** Safe methods only (GET, HEAD, OPTIONS). */
  readOnly: boolean;
  /** The key's expiry, epoch ms: no token of the session outlives it. */
  notAfterMs?: number;
}

/**
 * Whose session is asked about; `sessionStartedAtMs` when the caller knows the
 * session, `roles` as its token carries them.
 */
export type SessionHolder = Pick<Identity, 'sub' | 'apiKeyId' | 'keyScope'> & {
  sessionStartedAtMs?: number | undefined;
  roles?: readonly string[] | undefined;
  scopes?: readonly string[] | undefined;
  readOnly?: boolean | undefined;
};

export interface IdentityProvider {
  /**
   * Checks a username with a password or one of the user's API keys (given in
   * the password field, spec 5.1). Resolves null for every kind of failure
   * (unknown user, wrong secret, disabled user, revoked key), taking the same
   * time for an unknown user as for a wrong password.
   */
  authenticate(username: string, secret: string, options?: AuthenticateOptions): Promise<Identity | null>;
  /** True when `username` names an existing user (the audit log writes only such names). */
  hasUser(username: string): boolean;
  /**
   * True while the user is enabled, the session (when its start is given)
   * began after the user was last disabled, and, for an API-key login, the
   * key is unrevoked.
   */
  isActive(identity: SessionHolder): boolean;
  /**
   * What the session may do as of now (the users file as last read):
   * undefined when it is not active. Tokens carry the grants of the time they
   * were signed; a role taken away since is refused at once by the checks
   * that compare the two.
   */
  grants(identity: SessionHolder): Grants | undefined;
  /**
   * Called after the identities changed (the users file was reloaded, by
   * this instance's watcher or a caller): `isActive` may answer differently
   * from now on, so whatever holds an identity open (a WebSocket tunnel)
   * asks again. Returns the function that removes the listener.
   */
  onChange(listener: () => void): () => void;
  /**
   * Whether the session's API key is still there, asked where a key may live
   * outside memory (the store): once a login's session exists (a key revoked
   * while the login was under way ends the sessions it finds; this catches
   * the one made just after), and at a token's first check (so `isActive`
   * knows the key from then on). Absent: every key is in memory.
   */
  stillHolds?(identity: Pick<Identity, 'sub' | 'apiKeyId'>): Promise<boolean>;
  close(): Promise<void>;
}
