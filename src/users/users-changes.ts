// Changes to the users file's contents, as the CLI and the account page make
// them: pure functions that take the contents and return new contents (or
// throw a UsersChangeError saying why not), which keeps each caller a thin
// read-change-write loop around users-file.ts.
import { randomUUID } from 'node:crypto';
import { RoleNameSchema } from '../core/role-name.js';
import type { KeyScope } from './key-scope.js';
import { isValidUsername, MAX_LABEL_LENGTH, type ApiKeyRecord, type UserRecord, type UsersFileData } from './users-file.js';

export type UsersChangeErrorCode =
  | 'invalid_username'
  | 'duplicate_user'
  | 'unknown_user'
  | 'invalid_label'
  | 'duplicate_api_key'
  | 'unknown_api_key'
  | 'api_key_already_revoked'
  | 'invalid_role'
  | 'invalid_scope'
  | 'unknown_factor';

/** A change the users file cannot take (unknown user, duplicate user, unknown key…). */
export class UsersChangeError extends Error {
  readonly code: UsersChangeErrorCode;

  constructor(code: UsersChangeErrorCode, message: string) {
    super(message);
    this.name = 'UsersChangeError';
    this.code = code;
  }
}

export function getUser(data: UsersFileData, username: string): UserRecord {
  if (!Object.hasOwn(data.users, username)) {
    throw new UsersChangeError('unknown_user', `unknown user: ${username}`);
  }
  return data.users[username]!;
}

export function findApiKey(data: UsersFileData, keyId: string): { username: string; key: ApiKeyRecord } | null {
  for (const [username, user] of Object.entries(data.users)) {
    const key = user.apiKeys.find((k) => k.id === keyId);
    if (key) return { username, key };
  }
  return null;
}

/** Throws what `addUser` would for this name: lets the CLI refuse before asking for a password. */
export function assertCanAddUser(data: UsersFileData, username: string): void {
  if (!isValidUsername(username)) {
    throw new UsersChangeError('invalid_username', `invalid user name: ${JSON.stringify(username)} (1 to 128 letters, digits and . _ @ -)`);
  }
  if (Object.hasOwn(data.users, username)) {
    throw new UsersChangeError('duplicate_user', `user already exists: ${username}`);
  }
}

/** Adds a user with a fresh random id (the token subject: a removed and re-added user is a new subject). */
export function addUser(data: UsersFileData, username: string, passwordHash: string, now: Date = new Date()): UsersFileData {
  assertCanAddUser(data, username);
  const user: UserRecord = { id: randomUUID(), passwordHash, disabled: false, createdAt: now.toISOString(), apiKeys: [] };
  return { ...data, users: { ...data.users, [username]: user } };
}

/** Disabling also voids every session the user has (`sessionsNotBefore`); enabling lets only new logins in. */
export function setDisabled(data: UsersFileData, username: string, disabled: boolean, now = new Date()): UsersFileData {
  const user = getUser(data, username);
  return withUser(data, username, { ...user, disabled, ...(disabled && { sessionsNotBefore: now.toISOString() }) });
}

/** Removes the user and all of their API keys. */
export function removeUser(data: UsersFileData, username: string): UsersFileData {
  getUser(data, username);
  const users = Object.fromEntries(Object.entries(data.users).filter(([name]) => name !== username));
  return { ...data, users };
}

export interface NewApiKey {
  keyId: string;
  hash: string;
  label?: string;
  /** Limits the key to part of its owner's power; its roles must be the owner's. */
  scope?: KeyScope;
  /** `user` when its user made it (the account API); left out, the operator's. */
  createdBy?: 'user' | 'operator';
}

export function addApiKey(data: UsersFileData, username: string, key: NewApiKey, now: Date = new Date()): UsersFileData {
  const user = getUser(data, username);
  if (key.label !== undefined && key.label.length > MAX_LABEL_LENGTH) {
    throw new UsersChangeError('invalid_label', `the label is longer than ${MAX_LABEL_LENGTH} characters`);
  }
  if (findApiKey(data, key.keyId)) {
    throw new UsersChangeError('duplicate_api_key', `API key id already in use: ${key.keyId}`);
  }
  const foreign = (key.scope?.roles ?? []).filter((role) => !(user.roles ?? []).includes(role));
  if (foreign.length > 0) {
    throw new UsersChangeError('invalid_scope', `a key can only carry roles its user has; ${username} lacks ${foreign.join(', ')}`);
  }
  const record: ApiKeyRecord = {
    id: key.keyId,
    hash: key.hash,
    ...(key.label !== undefined ? { label: key.label } : {}),
    createdAt: now.toISOString(),
    ...(key.scope !== undefined ? { scope: key.scope } : {}),
    ...(key.createdBy !== undefined ? { createdBy: key.createdBy } : {}),
  };
  return withUser(data, username, { ...user, apiKeys: [...user.apiKeys, record] });
}

/** Marks the key revoked (kept, so listings show when); revoking twice is an error that keeps the first time. */
export function revokeApiKey(data: UsersFileData, keyId: string, now: Date = new Date()): UsersFileData {
  const found = findApiKey(data, keyId);
  if (!found) throw new UsersChangeError('unknown_api_key', `unknown API key: ${keyId}`);
  if (found.key.revokedAt !== undefined) {
    throw new UsersChangeError('api_key_already_revoked', `API key ${keyId} was already revoked at ${found.key.revokedAt}`);
  }
  const user = data.users[found.username]!;
  const apiKeys = user.apiKeys.map((k) => (k.id === keyId ? { ...k, revokedAt: now.toISOString() } : k));
  return withUser(data, found.username, { ...user, apiKeys });
}

/** Gives or takes a role; giving one the user has, or taking one they lack, is an error. */
export function changeRole(data: UsersFileData, username: string, role: string, give: boolean): UsersFileData {
  const user = getUser(data, username);
  if (!RoleNameSchema.safeParse(role).success) throw new UsersChangeError('invalid_role', `invalid role name: ${role}`);
  const current = user.roles ?? [];
  const has = current.includes(role);
  if (give === has) throw new UsersChangeError('invalid_role', `${username} ${has ? 'already has' : 'does not have'} the role ${role}`);
  const roles = give ? [...current, role].sort() : current.filter((r) => r !== role);
  const { roles: _old, ...rest } = user;
  return withUser(data, username, roles.length > 0 ? { ...rest, roles } : rest);
}

function withUser(data: UsersFileData, username: string, user: UserRecord): UsersFileData {
  return { ...data, users: { ...data.users, [username]: user } };
}
