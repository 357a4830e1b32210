// Users' own API keys in the store (Redis): a key made on one instance works
// on every other at once, and a key deleted stops every login with it at
// once. The rules are this module's: how many a user may hold, what a listing
// shows, how long an expired key stays listed; where and how the store keeps
// them is store/redis-api-keys.ts's.
import { gatehouseError } from '../core/errors.js';
import type { ApiKeyRecord } from '../users/users-file.js';
import type { NewApiKey } from '../users/users-changes.js';
import type { ApiKeyRecords } from '../store/api-key-records.js';
import type { ApiKeyDirectory, HeldApiKey, KeyOwner } from './api-key-directory.js';

/** An expired key stays listed (as expired) this long before the store forgets it. */
const KEEP_EXPIRED_MS = 7 * 86_400_000;
/** How long a last use is remembered when the key does not say how long it lives. */
const LAST_USE_TTL_MS = 400 * 86_400_000;

export class StoreApiKeys implements ApiKeyDirectory {
  readonly kind = 'store' as const;
  readonly #records: ApiKeyRecords;

  constructor(records: ApiKeyRecords) {
    this.#records = records;
  }

  /** The key of that id, whoever holds it; null for none (or one that is not readable). */
  async find(keyId: string): Promise<HeldApiKey | null> {
    const stored = await this.#records.find(keyId);
    return stored ? held(stored.sub, stored.record) : null;
  }

  async list(owner: KeyOwner): Promise<HeldApiKey[]> {
    const ids = await this.#records.listedIds(owner.sub);
    const found = await Promise.all(ids.map((id) => this.find(id)));
    // Ids whose key the store has forgotten (expired) are dropped from the listing as they are met.
    const gone = ids.filter((_, index) => found[index] === null);
    if (gone.length > 0) await this.#records.unlist(owner.sub, gone);
    return found.filter((key): key is HeldApiKey => key !== null && key.sub === owner.sub && key.revokedAt === undefined).sort(byCreation);
  }

  async create(owner: KeyOwner, key: NewApiKey, maxPerUser: number): Promise<HeldApiKey> {
    // Counted from the listing, which drops forgotten ids: two creates racing may both pass, by one key at most each.
    if ((await this.list(owner)).length >= maxPerUser) throw gatehouseError('api_key_limit', { reason: `a user may hold at most ${maxPerUser} API keys` });
    const record: ApiKeyRecord = {
      id: key.keyId,
      hash: key.hash,
      ...(key.label !== undefined && { label: key.label }),
      createdAt: new Date().toISOString(),
      ...(key.scope !== undefined && { scope: key.scope }),
    };
    const expiresAt = key.scope?.expiresAt;
    await this.#records.add(owner, key.keyId, JSON.stringify(record), expiresAt === undefined ? undefined : Date.parse(expiresAt) + KEEP_EXPIRED_MS);
    return { ...record, sub: owner.sub };
  }

  async revoke(owner: KeyOwner, keyId: string): Promise<boolean> {
    const key = await this.find(keyId);
    if (key === null || key.sub !== owner.sub) return false;
    await this.#records.remove(owner.sub, keyId);
    return true;
  }

  recordUse(keyId: string, atMs: number): void {
    this.#records.noteUse(keyId, atMs, LAST_USE_TTL_MS).catch(() => {});
  }

  lastUsed(keyIds: readonly string[]): Promise<Map<string, number>> {
    return this.#records.lastUses(keyIds);
  }
}

function held(sub: string, text: string): HeldApiKey | null {
  try {
    const record = JSON.parse(text) as ApiKeyRecord;
    return typeof record.id === 'string' && typeof record.hash === 'string' ? { ...record, sub } : null;
  } catch {
    return null;
  }
}

function byCreation(a: ApiKeyRecord, b: ApiKeyRecord): number {
  return a.createdAt.localeCompare(b.createdAt);
}
