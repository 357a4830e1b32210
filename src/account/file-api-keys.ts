// Users' own API keys in the users' records, for the in-memory store's single
// instance: written as `gatehouse apikeys` writes them (atomically, the same
// record, in the users file or with `identity.usersIn: store` in the store),
// then read back at once, so the new key logs in and a revoked one stops,
// before the answer leaves. Writes on this instance are one at a time: each
// reads what the previous one wrote.
//
// Each record says who made it (`createdBy`): this directory holds the keys
// users made, so it lists and revokes only those, on the in-memory store and
// beside Redis alike (a gateway moved to Redis keeps them its users').
import { gatehouseError } from '../core/errors.js';
import type { LocalIdentityProvider } from '../users/local-provider.js';
import { isUserMadeKey } from '../users/users-file.js';
import { addApiKey, findApiKey, revokeApiKey, UsersChangeError, type NewApiKey } from '../users/users-changes.js';
import type { ApiKeyDirectory, HeldApiKey, KeyOwner } from './api-key-directory.js';

export class FileApiKeys implements ApiKeyDirectory {
  readonly kind = 'users file' as const;
  readonly #identity: LocalIdentityProvider;
  /** Last uses since start: not worth a file write per login. */
  readonly #used = new Map<string, number>();
  #writing: Promise<unknown> = Promise.resolve();

  constructor(identity: LocalIdentityProvider) {
    this.#identity = identity;
  }

  async list(owner: KeyOwner): Promise<HeldApiKey[]> {
    return this.#identity
      .apiKeysOf(owner.sub)
      .filter((key) => key.revokedAt === undefined && isUserMadeKey(key))
      .map((key) => ({ ...key, sub: owner.sub }));
  }

  create(owner: KeyOwner, key: NewApiKey, maxPerUser: number): Promise<HeldApiKey> {
    return this.#change(async () => {
      const next = await this.#identity.change((data) => {
        const held = data.users[owner.username]?.apiKeys.filter((k) => k.revokedAt === undefined).length ?? 0;
        if (held >= maxPerUser) throw gatehouseError('api_key_limit', { reason: `a user may hold at most ${maxPerUser} API keys` });
        return addApiKey(data, owner.username, { ...key, createdBy: 'user' });
      });
      return { ...findApiKey(next, key.keyId)!.key, sub: owner.sub };
    });
  }

  revoke(owner: KeyOwner, keyId: string): Promise<boolean> {
    return this.#change(async () => {
      let revoked = false;
      await this.#identity.change((data) => {
        const found = findApiKey(data, keyId);
        revoked = found !== null && found.username === owner.username && found.key.revokedAt === undefined && isUserMadeKey(found.key);
        return revoked ? revokeApiKey(data, keyId) : data;
      });
      return revoked;
    });
  }

  recordUse(keyId: string, atMs: number): void {
    this.#used.set(keyId, atMs);
  }

  async lastUsed(keyIds: readonly string[]): Promise<Map<string, number>> {
    return new Map(keyIds.flatMap((id) => (this.#used.has(id) ? [[id, this.#used.get(id)!] as const] : [])));
  }

  /** One change at a time; the provider's change reads the users again, so it is in force when it resolves. */
  #change<T>(write: () => Promise<T>): Promise<T> {
    const run = this.#writing.then(async () => {
      try {
        return await write();
      } catch (error) {
        if (error instanceof UsersChangeError) throw gatehouseError('invalid_request', { reason: error.message, cause: error });
        throw error;
      }
    });
    this.#writing = run.catch(() => {});
    return run;
  }
}
