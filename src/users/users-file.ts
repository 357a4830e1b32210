// The users file: the local identity provider's only state, a YAML file that
// the `gatehouse users …` and `gatehouse apikeys …` commands manage and the
// server reads (and re-reads when it changes).
//
// Reading validates the whole file and reports every problem by its path, so
// an operator who edited it by hand fixes them all in one go. Writing is
// atomic (temporary file, then rename), so the server never sees half a file.
// The changes the CLI and the account page make are users-changes.ts's.
import { readFile } from 'node:fs/promises';
import { Document, parseDocument } from 'yaml';
import { z } from 'zod';
import { writeFileAtomic } from '../files/atomic-write.js';
import { KEY_ID_PATTERN } from './api-keys.js';
import { RoleNameSchema } from '../core/role-name.js';
import { KeyScopeSchema } from './key-scope.js';
import { isWellFormedPasswordHash } from '../core/password-hash-format.js';
import { FactorsSchema } from './factor-records.js';

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
  /**
   * Who made the key: `user` (through the account API, so theirs to revoke
   * there, whatever store the gateway later moves to) or `operator` (the CLI).
   * Absent means `operator`: files written before this field, and hand edits.
   */
  createdBy: z.enum(['user', 'operator']).optional(),
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
  /** Second factors (factor-records.ts); absent: the password alone. */
  factors: FactorsSchema.optional(),
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
    throw new UsersFileError(
      source,
      document.errors.map((e) => `YAML: ${e.message.split('\n')[0]}`),
    );
  }
  return validateUsersData(document.toJS() ?? {}, source);
}

/** Validates users as read from anywhere (the file's YAML, the store's records); `source` names them in errors. */
export function validateUsersData(raw: unknown, source: string): UsersFileData {
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

/** Whether the key's user may revoke it through the account API (the file says who made it). */
export function isUserMadeKey(key: ApiKeyRecord): boolean {
  return key.createdBy === 'user';
}

/** Unrevoked, and not past the expiry its scope names. */
export function isApiKeyActive(key: ApiKeyRecord, now: number = Date.now()): boolean {
  return key.revokedAt === undefined && (key.scope?.expiresAt === undefined || Date.parse(key.scope.expiresAt) > now);
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
