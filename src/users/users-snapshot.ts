// The users file read into an immutable snapshot of three indexes (by name,
// by id, and API key id → key), swapped whole on reload so a login never sees
// half an update; and what a session may do, read from it.
import type { Grants, SessionHolder } from './identity-provider.js';
import type { KeyScope } from './key-scope.js';
import type { ApiKeyRecord, UserRecord, UsersFileData } from './users-file.js';

export interface IndexedUser {
  username: string;
  record: UserRecord;
  /** `record.sessionsNotBefore` in epoch ms (0: none), read once per reload rather than per request. */
  sessionsNotBeforeMs: number;
}

export interface IndexedKey {
  user: IndexedUser;
  key: ApiKeyRecord;
}

export interface Snapshot {
  byName: ReadonlyMap<string, IndexedUser>;
  byId: ReadonlyMap<string, IndexedUser>;
  byKeyId: ReadonlyMap<string, IndexedKey>;
}

export function buildSnapshot(data: UsersFileData): Snapshot {
  const byName = new Map<string, IndexedUser>();
  const byId = new Map<string, IndexedUser>();
  const byKeyId = new Map<string, IndexedKey>();
  for (const [username, record] of Object.entries(data.users)) {
    const user: IndexedUser = { username, record, sessionsNotBeforeMs: record.sessionsNotBefore ? Date.parse(record.sessionsNotBefore) : 0 };
    byName.set(username, user);
    byId.set(record.id, user);
    for (const key of record.apiKeys) byKeyId.set(key.id, { user, key });
  }
  return { byName, byId, byKeyId };
}

/** A user's roles and groups, narrowed by an API key's scope when the session was opened with one. */
export function grantsOf(roles: readonly string[], groups: readonly string[], scope: KeyScope | undefined): Grants {
  return {
    roles: scope?.roles === undefined ? roles : roles.filter((role) => scope.roles!.includes(role)),
    groups,
    scopes: scope?.scopes,
    readOnly: scope?.readOnly ?? false,
    ...(scope?.expiresAt !== undefined && { notAfterMs: Date.parse(scope.expiresAt) }),
  };
}

/**
 * The scope of a session's key: the users' record of it; for a store-held key
 * (not in the snapshot), what its session's token carries, which the login
 * narrowed by the key's scope, so a refresh never widens it.
 */
export function sessionKeyScope(snapshot: Snapshot, holder: SessionHolder): KeyScope | undefined {
  if (holder.apiKeyId === undefined) return undefined;
  const fileKey = snapshot.byKeyId.get(holder.apiKeyId);
  if (fileKey) return fileKey.key.scope;
  // At login the key itself is at hand; afterwards, its session's token.
  if (holder.keyScope) return holder.keyScope;
  return {
    roles: [...(holder.roles ?? [])],
    ...(holder.scopes !== undefined && { scopes: [...holder.scopes] }),
    ...(holder.readOnly === true && { readOnly: true }),
  };
}
