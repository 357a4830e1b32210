// Who a user is when a fronted OpenID Provider keeps the users: the provider
// alone checks credentials (at its token endpoint, oidc/provider-auth.ts), and
// its tokens are the whole truth about a user, so what the rest of the gateway
// asks of an identity provider is answered from the token: a user is active
// while the provider's token is (a user disabled there loses access when the
// access token expires, or within the introspection interval for a refresh
// token), and holds the roles its provider session holds as of the newest
// token seen (session-roles.ts): a route rule asks at every request, so a
// token checked before a role was taken away loses it here.
import type { SessionRoles } from './session-roles.js';
import type { AuthenticateOptions, Grants, Identity, IdentityProvider, SessionHolder } from '../users/identity-provider.js';

const NONE: readonly string[] = Object.freeze([]);

export class ProviderIdentity implements IdentityProvider {
  readonly #sessionRoles: SessionRoles | undefined;

  constructor(sessionRoles?: SessionRoles) {
    this.#sessionRoles = sessionRoles;
  }

  /** Never here: credentials go to the provider's token endpoint, not to a local check. */
  async authenticate(_username: string, _secret: string, _options?: AuthenticateOptions): Promise<Identity | null> {
    return null;
  }

  /** No local list of users: the audit log writes a username only after the provider accepted the login. */
  hasUser(): boolean {
    return false;
  }

  isActive(): boolean {
    return true;
  }

  /** `sid`: the principal's provider session, when the holder is a principal. */
  grants(holder: SessionHolder & { sid?: string }): Grants {
    const session = holder.sid === undefined ? undefined : this.#sessionRoles?.current(holder.sid, holder.sub);
    return { roles: session ?? holder.roles ?? NONE, groups: NONE, scopes: undefined, readOnly: false };
  }

  /** Nothing changes here: the provider's changes reach the gateway through its tokens. */
  onChange(): () => void {
    return () => {};
  }

  async close(): Promise<void> {}
}
