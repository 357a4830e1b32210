// Who a user is when several providers are configured: each principal names
// its provider, and the questions the bearer rule and the route rules ask
// (still active? which roles now?) go to that provider alone. Only the local
// users check passwords, hold API keys and change under the gateway's feet.
import type { Principal } from '../core/principal.js';
import type { AuthenticateOptions, Grants, Identity, IdentityProvider, SessionHolder } from '../users/identity-provider.js';

type Holder = SessionHolder & Partial<Pick<Principal, 'sid' | 'provider'>>;

export class ProviderIdentities implements IdentityProvider {
  readonly #local: { name: string; identity: IdentityProvider } | undefined;
  readonly #byName: ReadonlyMap<string, IdentityProvider>;

  /** `byName`: every provider's identity, the local one (if any) among them under `local.name`. */
  constructor(byName: ReadonlyMap<string, IdentityProvider>, localName: string | undefined) {
    this.#byName = byName;
    const local = localName === undefined ? undefined : byName.get(localName);
    this.#local = local === undefined ? undefined : { name: localName!, identity: local };
  }

  /** The local users' check (API keys stay local); null without local users. */
  async authenticate(username: string, secret: string, options?: AuthenticateOptions): Promise<Identity | null> {
    return this.#local === undefined ? null : this.#local.identity.authenticate(username, secret, options);
  }

  hasUser(username: string): boolean {
    return this.#local?.identity.hasUser(username) ?? false;
  }

  /** One comparison on the cached path: a principal of the local users is asked about there, any other is its token's. */
  isActive(holder: Holder): boolean {
    const local = this.#local;
    if (local !== undefined && holder.provider === local.name) return local.identity.isActive(holder);
    return true;
  }

  grants(holder: Holder): Grants | undefined {
    const identity = holder.provider === undefined ? undefined : this.#byName.get(holder.provider);
    return identity?.grants(holder);
  }

  onChange(listener: () => void): () => void {
    return this.#local?.identity.onChange(listener) ?? (() => {});
  }

  /** Only the local users hold API keys. */
  async stillHolds(identity: Pick<Identity, 'sub' | 'apiKeyId'>): Promise<boolean> {
    const stillHolds = this.#local?.identity.stillHolds;
    return stillHolds === undefined ? true : stillHolds.call(this.#local!.identity, identity);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#byName.values()].map((identity) => identity.close()));
  }
}
