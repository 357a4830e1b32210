// The identity provider backed by Gatehouse's own users: the local users
// file, or with `identity.usersIn: store` the users held in Redis (the
// source is users-source.ts's or store-users.ts's).
//
// The users are read into an immutable snapshot of three indexes (by name,
// by id, and API key id → key), swapped whole on reload, so a login never
// sees half an update. With `watch`, the file is polled (the CLI replaces it
// by rename; polling also notices a file that appears after start); the
// store is followed through its announcements.
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { IdentityConfig } from '../config/schema.js';
import { Listeners } from '../store/listeners.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import { apiKeySecretMatches, hashApiKeySecret, parseApiKey } from './api-keys.js';
import type { AuthenticateOptions, Grants, Identity, IdentityProvider, SessionHolder } from './identity-provider.js';
import { EqualTimePasswordCheck } from './equal-time-password-check.js';
import type { PasswordCheckOptions } from './password-check-options.js';
import { emptyUsersFile, isApiKeyActive, type ApiKeyRecord, type UserRecord, type UsersFileData } from './users-file.js';
import { buildSnapshot, grantsOf, sessionKeyScope, type IndexedKey, type Snapshot } from './users-snapshot.js';
import { fileUsersSource, type UsersChange, type UsersSource } from './users-source.js';

export type LocalIdentityConfig = Extract<IdentityConfig, { provider: 'local' }>;

/** Store-held key ids remembered as seen; one forgotten is only looked up again at its next token's first check. */
const STORE_KEY_IDS_MAX = 100_000;

/** The queue key of a login that names no address (a caller outside HTTP). */
const NO_ADDRESS = '';

export interface LocalIdentityEvents {
  /** After each re-read of the users: whether its users were taken (false: logged, the previous users stay). */
  reload: [applied: boolean];
}

/** What an instance with no users says, true to where the users are. */
const NO_USERS_HINT: Record<UsersSource['kind'], string> = {
  'users file': 'holds no users (or does not exist): nobody can log in; `gatehouse users add NAME` creates it',
  store: 'holds no users: nobody can log in; `gatehouse users add NAME` adds one there (no users file is needed)',
};

export class LocalIdentityProvider extends EventEmitter<LocalIdentityEvents> implements IdentityProvider {
  readonly #source: UsersSource;
  readonly #logger: Logger;
  /** Known or not, a name's password check takes as long (equal-time-password-check.ts). */
  readonly #passwordCheck: EqualTimePasswordCheck;
  /** Compared in place of a missing API key's digest: the digest of a random secret nobody holds. */
  readonly #unmatchableDigest = hashApiKeySecret(randomBytes(32).toString('base64url'));
  readonly #passwords: PasswordCheckOptions;
  #snapshot: Snapshot;
  /** The digest of the users as last taken (store only: peers compare it). */
  #digest: string | undefined;
  #stopWatching: (() => Promise<void>) | undefined;
  readonly #changed: Listeners<void>;
  /**
   * Store-held key ids this instance has seen in the store (at a login, or a
   * token's first check): `isActive` answers from memory on every cached
   * check, so it must know them. A key id neither the file nor this set
   * knows (a line removed from the users file by hand) is not active.
   */
  readonly #storeKeyIds = new LRUCache<string, true>({ max: STORE_KEY_IDS_MAX });
  #closed = false;
  #readsStarted = 0;
  #readApplied = 0;

  private constructor(source: UsersSource, logger: Logger, passwordCheck: EqualTimePasswordCheck, data: UsersFileData, passwords: PasswordCheckOptions) {
    super();
    this.#passwords = passwords;
    this.#source = source;
    this.#logger = logger;
    this.#passwordCheck = passwordCheck;
    this.#snapshot = buildSnapshot(data);
    this.#changed = new Listeners<void>('identities changed', logger);
  }

  /**
   * Reads the users (an invalid users file fails the start) and, with
   * `watch` (always, for the store: it is the only way to hear of changes),
   * follows their changes. `source` absent: the users file.
   */
  static async open(
    config: Omit<LocalIdentityConfig, 'usersIn' | 'usersRereadS'>,
    logger: Logger,
    passwords: PasswordCheckOptions = {},
    source?: UsersSource,
  ): Promise<LocalIdentityProvider> {
    const log = logger.child({ component: 'identity', ...(source ? { usersIn: source.kind } : { usersFile: config.usersFile }) });
    const usersSource = source ?? fileUsersSource(config.usersFile, log);
    // A store that does not answer at start: nobody logs in until it does (the watch reads the users again).
    const read = await usersSource.read().catch((error: unknown) => {
      if (usersSource.kind !== 'store') throw error;
      log.error({ err: error }, 'cannot read the users from the store yet: nobody can log in until it answers');
      return { data: emptyUsersFile(), digest: undefined };
    });
    // After the users are read: an unknown name's stand-in check costs what theirs cost.
    const passwordCheck = await EqualTimePasswordCheck.create(
      passwords,
      Object.values(read.data.users).map((user) => user.passwordHash),
    );
    const provider = new LocalIdentityProvider(usersSource, log, passwordCheck, read.data, passwords);
    provider.#digest = read.digest;
    const users = provider.#snapshot.byName.size;
    const where = usersSource.kind === 'store' ? 'the store' : 'the users file';
    if (users === 0) log.warn(`${where} ${NO_USERS_HINT[usersSource.kind]}`);
    else log.info({ users }, usersSource.kind === 'store' ? 'users loaded from the store' : 'users file loaded');
    if (config.watch || usersSource.kind === 'store') provider.#stopWatching = usersSource.watch(() => provider.reload());
    return provider;
  }

  /** Where the users are: the users file, or the store. */
  get usersIn(): UsersSource['kind'] {
    return this.#source.kind;
  }

  /** The digest of the users as last taken, when peers compare it (the store); undefined for the users file. */
  viewDigest(): string | undefined {
    return this.#digest;
  }

  /**
   * One change of the users where they are (the account page's keys), in
   * force here when it resolves; every other instance hears of it from the
   * file watch or the store's announcement.
   */
  async change(change: UsersChange): Promise<UsersFileData> {
    try {
      return await this.#source.change(change);
    } finally {
      await this.reload();
    }
  }

  /**
   * Every login does the same work until it succeeds: one digest comparison
   * (against a digest nothing matches when the secret names no key) and,
   * unless it is a valid API key of this user, one scrypt, or for an unknown
   * username a wait as long as one in the same queue turn (scrypt-stand-in.ts).
   * So an API key with an existing key id and a wrong secret takes what an
   * unknown key id, an unknown user or a wrong password takes, and no answer's
   * timing tells which key ids or users exist.
   */
  async authenticate(username: string, secret: string, options: AuthenticateOptions = {}): Promise<Identity | null> {
    const snapshot = this.#snapshot;
    const apiKey = parseApiKey(secret);
    const indexedKey = apiKey ? (snapshot.byKeyId.get(apiKey.keyId) ?? (await this.#storeKey(apiKey.keyId, snapshot))) : undefined;
    const keyMatches = apiKeySecretMatches(apiKey?.secret ?? secret, indexedKey?.key.hash ?? this.#unmatchableDigest);
    if (keyMatches && indexedKey) {
      const identity = this.#apiKeyIdentity(username, indexedKey);
      if (identity) {
        this.#passwords.onApiKeyUsed?.(indexedKey.key.id);
        return identity;
      }
    }
    // Whatever else it is, it is tried as a password: the scrypt every refusal pays.
    return this.#authenticateWithPassword(username, secret, snapshot, options.clientAddress ?? NO_ADDRESS);
  }

  hasUser(username: string): boolean {
    return this.#snapshot.byName.has(username);
  }

  isActive({ sub, apiKeyId, sessionStartedAtMs }: SessionHolder): boolean {
    const snapshot = this.#snapshot;
    const user = snapshot.byId.get(sub);
    if (!user || user.record.disabled) return false;
    if (sessionStartedAtMs !== undefined && sessionStartedAtMs <= user.sessionsNotBeforeMs) return false;
    if (apiKeyId === undefined) return true;
    const indexedKey = snapshot.byKeyId.get(apiKeyId);
    // A key the file does not list: a store-held key seen in the store (its revocation ends its sessions through the store).
    if (indexedKey === undefined) return this.#storeKeyIds.has(apiKeyId);
    return indexedKey.user.record.id === sub && isApiKeyActive(indexedKey.key);
  }

  async stillHolds(identity: Pick<Identity, 'sub' | 'apiKeyId'>): Promise<boolean> {
    const keyId = identity.apiKeyId;
    if (keyId === undefined || this.#snapshot.byKeyId.has(keyId) || !this.#passwords.storeKeys) return true;
    const stored = await this.#passwords.storeKeys.find(keyId).catch((error: unknown) => {
      throw storeUnavailable(error);
    });
    const holds = stored !== null && stored.sub === identity.sub && isApiKeyActive(stored);
    if (holds) this.#storeKeyIds.set(keyId, true);
    return holds;
  }

  /** The user of that id as the file says: name, creation, roles, groups, second factors; undefined when unknown. */
  userOf(sub: string): (Pick<UserRecord, 'createdAt' | 'factors'> & { username: string; roles: readonly string[]; groups: readonly string[] }) | undefined {
    const { username, record } = this.#snapshot.byId.get(sub) ?? {};
    return record && { username: username!, createdAt: record.createdAt, roles: record.roles ?? [], groups: record.groups ?? [], factors: record.factors };
  }

  /** The API keys the users file lists for the user, revoked ones included. */
  apiKeysOf(sub: string): readonly ApiKeyRecord[] {
    return this.#snapshot.byId.get(sub)?.record.apiKeys ?? [];
  }

  grants(holder: SessionHolder): Grants | undefined {
    if (!this.isActive(holder)) return undefined;
    const user = this.#snapshot.byId.get(holder.sub)!;
    return grantsOf(user.record.roles ?? [], user.record.groups ?? [], sessionKeyScope(this.#snapshot, holder));
  }

  /**
   * Re-reads the users now (the watcher calls this too). Users that do not
   * read or validate are logged and change nothing: the previous users stay.
   * Resolves true when the new contents were taken.
   */
  async reload(): Promise<boolean> {
    const applied = await this.#read();
    if (!this.#closed) {
      if (applied) this.#changed.emit();
      this.emit('reload', applied);
    }
    return applied;
  }

  onChange(listener: () => void): () => void {
    return this.#changed.add(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#changed.clear();
    await this.#stopWatching?.();
    this.#stopWatching = undefined;
  }

  async #read(): Promise<boolean> {
    const reading = ++this.#readsStarted;
    try {
      const { data, digest } = await this.#source.read();
      // Two overlapping reloads (watcher and caller): a read that started earlier never wins.
      if (this.#closed || reading < this.#readApplied) return false;
      this.#readApplied = reading;
      this.#snapshot = buildSnapshot(data);
      this.#digest = digest;
      // Each announcement in the store reads the users again: said at debug level there, the file's rare reloads at info.
      const level = this.#source.kind === 'store' ? 'debug' : 'info';
      this.#logger[level]({ users: this.#snapshot.byName.size }, this.#source.kind === 'store' ? 'users read again from the store' : 'users file reloaded');
      return true;
    } catch (error) {
      if (!this.#closed) {
        this.#logger.error(
          { err: error },
          `${this.#source.kind === 'store' ? 'users not read again from the store' : 'users file not reloaded'}: keeping the previous users`,
        );
      }
      return false;
    }
  }

  /** A store-held key, with its user as the file says; a store that fails refuses the login as an unknown key would not: with a 503. */
  async #storeKey(keyId: string, snapshot: Snapshot): Promise<IndexedKey | undefined> {
    const stored = await this.#passwords.storeKeys?.find(keyId).catch((error: unknown) => {
      throw storeUnavailable(error);
    });
    const user = stored ? snapshot.byId.get(stored.sub) : undefined;
    if (!stored || !user) return undefined;
    const { sub: _sub, ...key } = stored;
    this.#storeKeyIds.set(keyId, true);
    return { user, key };
  }

  #apiKeyIdentity(username: string, { user, key }: IndexedKey): Identity | null {
    if (user.username !== username || !isApiKeyActive(key) || user.record.disabled) {
      // Never the username a refused login gave: it may be a password typed into the wrong field.
      this.#logger.debug({ apiKeyId: key.id }, 'API key login refused');
      return null;
    }
    const grants = grantsOf(user.record.roles ?? [], user.record.groups ?? [], key.scope);
    return {
      sub: user.record.id,
      username: user.username,
      method: 'api_key',
      apiKeyId: key.id,
      roles: grants.roles,
      groups: grants.groups,
      ...(key.scope && { keyScope: key.scope }),
    };
  }

  async #authenticateWithPassword(username: string, password: string, snapshot: Snapshot, clientAddress: string): Promise<Identity | null> {
    const user = snapshot.byName.get(username);
    // One scrypt for a known user, even a disabled one; for an unknown name a
    // wait as long, in the same queue turn: no timing tells them apart.
    const matches = await this.#passwordCheck.matches(password, user?.record.passwordHash, clientAddress);
    if (!user || !matches) {
      this.#logger.debug({ ...(user && { sub: user.record.id }) }, 'password login refused');
      return null;
    }
    // The file may have changed while scrypt ran: a user disabled or removed meanwhile does not get in.
    const current = this.#snapshot.byId.get(user.record.id);
    if (!current || current.record.disabled || user.record.disabled) {
      this.#logger.debug({ sub: user.record.id }, 'password login refused: user disabled');
      return null;
    }
    return { sub: user.record.id, username: user.username, method: 'pwd', roles: current.record.roles ?? [], groups: current.record.groups ?? [] };
  }
}
