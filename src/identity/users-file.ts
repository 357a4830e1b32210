// The users file: the local identity provider's only state, a YAML file that
// the `gatehouse users …` and `gatehouse apikeys …` commands manage and the
// server reads (and re-reads when it changes).
//
// Reading validates the whole file and reports every problem by its path, so
// an operator who edited it by hand fixes them all in one go. Writing is
// atomic (temporary file, then rename), so the server never sees half a file.
// The change helpers are pure: they take the file's contents and return new
// contents, which keeps the CLI a thin read-change-write loop.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Document, parseDocument } from 'yaml';
import { z } from 'zod';
import { writeFileAtomic } from '../files/atomic-write.js';
import { KEY_ID_PATTERN } from './api-keys.js';
import { RoleNameSchema } from '../core/role-name.js';
import { KeyScopeSchema, type KeyScope } from './key-scope.js';
import { isWellFormedPasswordHash } from '../core/password-hash-format.js';

export const USERNAME_PATTERN = /^[A-Za-z0-9._@-]{1,128}$/;
export const MAX_LABEL_LENGTH = 200;

const HEADER = ' Managed with `gatehouse users …` and `gatehouse apikeys …`.';

const isoTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date and time' });

const ApiKeyRecordSchema = z.strictObject({
  id: z.string().regex(KEY_ID_PATTERN, { error: 'must be 16 lowercase hexadecimal characters' }),
  hash: z.string().regex(/^[A-Za-z0-9_-]{43}$/, { error: 'must be a base64url SHA-256 digest (43 characters)' }),
  label: z.string().max(MAX_LABEL_LENGTH).optional(),
  createdAt: isoTime,
  revokedAt: isoTime.optional(),
  /** Absent: the key carries all of its owner's power. */
  scope: KeyScopeSchema.optional(),
});

const UserRecordSchema = z.strictObject({
  id: z.uuid({ error: 'must be a UUID' }),
  passwordHash: z.string().refine(isWellFormedPasswordHash, { error: 'must be a password hash of the form scrypt$ln=…,r=…,p=…$<salt>$<hash>' }),
  disabled: z.boolean().default(false),
  /**
   * Sessions started before this time are void: `users disable` sets it and
   * `enable` keeps it, so re-enabling a user never brings old sessions back.
   */
  sessionsNotBefore: isoTime.optional(),
  createdAt: isoTime,
  /** What the user may do on routes with rules (`routes[].authorize`); tokens carry them. */
  roles: z.array(RoleNameSchema).optional(),
  groups: z.array(RoleNameSchema).optional(),
  apiKeys: z.array(ApiKeyRecordSchema).default([]),
});

const UsernameSchema = z.string().regex(USERNAME_PATTERN, {
  error: 'invalid user name (1 to 128 letters, digits and . _ @ -)',
});

const UsersFileSchema = z
  .strictObject({
    // `users:` with nothing under it is an empty mapping, not an error.
    users: z.preprocess((value) => value ?? {}, z.record(UsernameSchema, UserRecordSchema)),
  })
  .superRefine(({ users }, ctx) => {
    // Ids are looked up across all users: each must name exactly one user or key.
    const userIds = new Map<string, string>();
    const keyIds = new Map<string, string>();
    for (const [name, user] of Object.entries(users)) {
      const owner = userIds.get(user.id);
      if (owner !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['users', name, 'id'], message: `duplicate user id (also used by ${owner})` });
      }
      userIds.set(user.id, name);
      user.apiKeys.forEach((key, index) => {
        const keyOwner = keyIds.get(key.id);
        if (keyOwner !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['users', name, 'apiKeys', index, 'id'], message: `duplicate API key id (also used by ${keyOwner})` });
        }
        keyIds.set(key.id, name);
      });
    }
  });

export type UsersFileData = z.infer<typeof UsersFileSchema>;
export type UserRecord = UsersFileData['users'][string];
export type ApiKeyRecord = UserRecord['apiKeys'][number];

/** The file cannot be read, parsed or validated; `problems` names each one by its path. */
export class UsersFileError extends Error {
  readonly file: string;
  readonly problems: readonly string[];

  constructor(file: string, problems: string[]) {
    super(`invalid users file ${file}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'UsersFileError';
    this.file = file;
    this.problems = problems;
  }
}

export type UsersChangeErrorCode =
  | 'invalid_username'
  | 'duplicate_user'
  | 'unknown_user'
  | 'invalid_label'
  | 'duplicate_api_key'
  | 'unknown_api_key'
  | 'api_key_already_revoked'
  | 'invalid_role'
  | 'invalid_scope';

/** A change the users file cannot take (unknown user, duplicate user, unknown key…). */
export class UsersChangeError extends Error {
  readonly code: UsersChangeErrorCode;

  constructor(code: UsersChangeErrorCode, message: string) {
    super(message);
    this.name = 'UsersChangeError';
    this.code = code;
  }
}

export function emptyUsersFile(): UsersFileData {
  return { users: {} };
}

/** `__proto__` passes the pattern but cannot be a key of a plain object (zod would silently drop it). */
export function isValidUsername(name: string): boolean {
  return USERNAME_PATTERN.test(name) && name !== '__proto__';
}

/** Reads and validates the file. A missing file holds no users. */
export async function readUsersFile(path: string): Promise<UsersFileData> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return emptyUsersFile();
    throw new UsersFileError(path, [`cannot read the file: ${code ?? String(error)}`]);
  }
  return parseUsersFile(text, path);
}

/** Validates the text of a users file; `source` names it in errors. */
export function parseUsersFile(text: string, source: string): UsersFileData {
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    // Only the first line: the following ones quote the file, which may hold hashes.
    throw new UsersFileError(source, document.errors.map((e) => `YAML: ${e.message.split('\n')[0]}`));
  }
  const raw: unknown = document.toJS() ?? {};
  const problems: string[] = [];
  if (hasReservedUsername(raw)) problems.push('users.__proto__: this user name is reserved');
  const result = UsersFileSchema.safeParse(raw);
  if (!result.success) problems.push(...result.error.issues.flatMap(describeIssue));
  if (problems.length > 0) throw new UsersFileError(source, problems);
  return result.data!;
}

/** Replaces the file atomically, readable by its owner only. */
export async function writeUsersFile(path: string, data: UsersFileData): Promise<void> {
  const result = UsersFileSchema.safeParse(data);
  if (!result.success) {
    // A bug in the caller, not an operator's typo; still, never write a file the server would refuse.
    throw new UsersFileError(path, ['refusing to write invalid contents:', ...result.error.issues.flatMap(describeIssue)]);
  }
  const document = new Document(result.data);
  document.commentBefore = HEADER;
  await writeFileAtomic(path, document.toString(), { mode: 0o600 });
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

/** Unrevoked, and not past the expiry its scope names. */
export function isApiKeyActive(key: ApiKeyRecord, now: number = Date.now()): boolean {
  return key.revokedAt === undefined && (key.scope?.expiresAt === undefined || Date.parse(key.scope.expiresAt) > now);
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

function hasReservedUsername(raw: unknown): boolean {
  if (raw === null || typeof raw !== 'object') return false;
  const users = (raw as Record<string, unknown>).users;
  return users !== null && typeof users === 'object' && Object.hasOwn(users, '__proto__');
}

function describeIssue(issue: z.core.$ZodIssue): string[] {
  const path = issue.path.map(String).join('.') || '(top level)';
  // A bad record key reports "Invalid key in record"; its own issues say what is wrong.
  if (issue.code === 'invalid_key') return issue.issues.map((inner) => `${path}: ${inner.message}`);
  return [`${path}: ${issue.message}`];
}
