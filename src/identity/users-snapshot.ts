// The users file read into an immutable snapshot of three indexes (by name,
// by id, and API key id → key), swapped whole on reload so a login never sees
// half an update; and what a session may do, read from it.
import type { Grants } from './identity-provider.js';
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
