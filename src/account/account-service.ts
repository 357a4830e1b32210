// What a user may do with their own account (spec 5.2, "Manage my account"):
// see it, make and revoke their API keys, see and end their sessions. Only
// ever the bearer's own: another user's key or session is "not found", never
// "forbidden", so ids reveal nothing.
//
// Making a key is a new credential, so it asks for more than a valid token:
// a password login of the last few minutes (GitHub's sudo mode). A session
// opened with an API key can never make keys: a leaked key must not breed.
import type { Logger } from 'pino';
import type { Principal } from '../core/principal.js';
import type { AccountConfig } from '../config/schema.js';
import { gatehouseError, isGatehouseError } from '../core/errors.js';
import { generateApiKey } from '../users/api-keys.js';
import type { KeyScope } from '../users/key-scope.js';
import type { LocalIdentityProvider } from '../users/local-provider.js';
import { isUserMadeKey, type ApiKeyRecord } from '../users/users-file.js';
import type { SessionRecord, SessionStore } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import type { ApiKeyDirectory, KeyOwner } from './api-key-directory.js';
import { revokeKeyAndEndSessions } from './revoke-api-key.js';
import { userActor, type AuditRecorder } from '../audit/recorder.js';

export interface AccountServiceOptions {
  identity: LocalIdentityProvider;
  /** Where the keys users make go: the store (Redis) or, in-memory, the users file. */
  keys: ApiKeyDirectory;
  /** The users file's keys that users made (`keys` itself on the in-memory store). */
  fileKeys: ApiKeyDirectory;
  store: SessionStore;
  settings: AccountConfig;
  logger: Logger;
  now?: () => number;
  /** Records keys made and revoked by their users (audit/). */
  audit?: AuditRecorder;
  /**
   * Among several identity providers, the local one's name: only its principals
   * have an account here (another provider's `sub` may be anything, a local user's id too).
   */
  provider?: string | undefined;
}

/** A key as its owner sees it: never its secret or its digest. */
export interface KeyView {
  id: string;
  label: string | null;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  /** `dpopJkt` only on a key pinned to a DPoP key. */
  scope: { roles: string[] | null; scopes: string[] | null; readOnly: boolean; dpopJkt?: string };
  /** `user`: made by the user (account API), revocable here; `operator`: made by an operator (CLI), revocable by them only. */
  managedBy: 'user' | 'operator';
}

export interface SessionView {
  id: string;
  method: 'password' | 'api_key';
  apiKeyId: string | null;
  createdAt: string;
  expiresAt: string;
  /** The session of the token that asked. */
  current: boolean;
}

export interface NewKeyRequest {
  label: string;
  expiresInDays?: number;
  scope?: { roles?: string[]; scopes?: string[]; readOnly?: boolean; dpopJkt?: string };
}

export class AccountService {
  readonly #options: AccountServiceOptions;
  readonly #now: () => number;

  constructor(options: AccountServiceOptions) {
    this.#options = options;
    // Read at each call: a test that moves the clock moves it here too.
    this.#now = options.now ?? (() => Date.now());
  }
  /** Among several identity providers, the local one's name (the page's login names it); absent otherwise. */
  get provider(): string | undefined {
    return this.#options.provider;
  }

  async account(principal: Principal): Promise<{ username: string; roles: readonly string[]; groups: readonly string[]; createdAt: string; sessions: number }> {
    const user = this.#user(principal);
    const sessions = await this.#stored(() => this.#options.store.listSessions(principal.sub));
    return { username: user.username, roles: user.roles, groups: user.groups, createdAt: user.createdAt, sessions: sessions.length };
  }

  async listKeys(principal: Principal): Promise<KeyView[]> {
    const owner = this.#owner(principal);
    const { keys, fileKeys } = this.#options;
    // Beside Redis, the keys users made in the users file (on the in-memory store, before a move) stay theirs.
    const [stored, filed] = await this.#stored(() => Promise.all([keys.list(owner), keys === fileKeys ? [] : fileKeys.list(owner)]));
    const own = [...filed, ...stored];
    // The users file's other keys are the operator's: shown, not revocable here.
    const operators = this.#operatorKeys(principal);
    const lastUsed = await this.#stored(() => keys.lastUsed([...own, ...operators].map((key) => key.id)));
    return [...operators.map((key) => view(key, 'operator', lastUsed)), ...own.map((key) => view(key, 'user', lastUsed))];
  }

  /** A new key, its secret shown this once. */
  async createKey(principal: Principal, request: NewKeyRequest): Promise<KeyView & { key: string }> {
    const { settings, keys, identity, logger } = this.#options;
    this.#requireRecentPassword(principal);
    const owner = this.#owner(principal);
    const days = request.expiresInDays ?? settings.defaultKeyLifetimeDays;
    if (days > settings.maxKeyLifetimeDays) throw gatehouseError('invalid_request', { reason: `expiresInDays must be at most ${settings.maxKeyLifetimeDays}` });
    const roles = request.scope?.roles;
    const held = this.#user(principal).roles;
    const foreign = roles?.filter((role) => !held.includes(role)) ?? [];
    if (foreign.length > 0) throw gatehouseError('invalid_request', { reason: `a key can only carry roles you have; you lack ${foreign.join(', ')}` });
    // Beside Redis, every key the users file holds for the user counts too (on the in-memory store, the file counts them itself).
    const fileHeld = keys.kind === 'store' ? identity.apiKeysOf(principal.sub).filter((key) => key.revokedAt === undefined).length : 0;
    const scope: KeyScope = {
      ...(roles !== undefined && { roles }),
      ...(request.scope?.scopes !== undefined && { scopes: request.scope.scopes }),
      ...(request.scope?.readOnly === true && { readOnly: true }),
      // Logins with the key must prove this DPoP key (RFC 9449): a copy of the key is useless elsewhere.
      ...(request.scope?.dpopJkt !== undefined && { dpopJkt: request.scope.dpopJkt }),
      expiresAt: new Date(this.#now() + days * 86_400_000).toISOString(),
    };
    const { key, keyId, hash } = generateApiKey();
    const record = await this.#stored(() => keys.create(owner, { keyId, hash, label: request.label, scope }, settings.maxKeysPerUser - fileHeld));
    logger.info({ event: 'api_key_created', sub: principal.sub, apiKeyId: keyId, by: 'account' }, 'API key created by its user');
    this.#options.audit?.record({
      kind: 'apikey.created',
      actor: userActor(owner.username),
      subject: keyId,
      outcome: 'ok',
      details: { owner: owner.username },
    });
    return { ...view(record, 'user', new Map()), key };
  }

  /** Revokes the key and ends the sessions it opened, on every instance. */
  async revokeKey(principal: Principal, keyId: string): Promise<void> {
    const { keys, fileKeys, store, logger } = this.#options;
    const owner = this.#owner(principal);
    const audit = this.#options.audit && { recorder: this.#options.audit, actor: userActor(owner.username) };
    const revoked = await this.#stored(
      async () =>
        (await revokeKeyAndEndSessions(keys, store, owner, keyId, audit)) ||
        (keys !== fileKeys && (await revokeKeyAndEndSessions(fileKeys, store, owner, keyId, audit))),
    );
    if (!revoked) {
      const operators = this.#operatorKeys(principal).some((key) => key.id === keyId);
      throw gatehouseError(operators ? 'api_key_managed_by_operator' : 'api_key_not_found');
    }
    logger.info({ event: 'api_key_revoked', sub: principal.sub, apiKeyId: keyId, by: 'account' }, 'API key revoked by its user');
  }

  async sessions(principal: Principal): Promise<SessionView[]> {
    const sessions = await this.#stored(() => this.#options.store.listSessions(principal.sub));
    return sessions.map((session) => sessionView(session, principal.sid));
  }

  async endSession(principal: Principal, sid: string): Promise<void> {
    const { store } = this.#options;
    const session = await this.#stored(() => store.getSession(sid));
    if (session === null || session.sub !== principal.sub) throw gatehouseError('session_not_found');
    await this.#stored(() => store.revokeSession(sid));
    this.#options.audit?.record({ kind: 'session.ended', actor: userActor(session.username), subject: sid, outcome: 'ok', details: { reason: 'account' } });
  }

  /** "Sign out everywhere": every session of the user, the asking one included. */
  async endAllSessions(principal: Principal): Promise<number> {
    const { store } = this.#options;
    const sessions = await this.#stored(() => store.listSessions(principal.sub));
    const ended = (await this.#stored(() => Promise.all(sessions.map((session) => store.revokeSession(session.sid))))).filter(Boolean).length;
    const event = { kind: 'session.ended_all', actor: userActor(this.#owner(principal).username), subject: principal.sub, outcome: 'ok' as const };
    this.#options.audit?.record({ ...event, details: { reason: 'account', sessions: ended } });
    return ended;
  }

  /** The users file's unrevoked keys of this user that the operator made (the CLI, or a file older than `createdBy`). */
  #operatorKeys(principal: Principal): ApiKeyRecord[] {
    return this.#options.identity.apiKeysOf(principal.sub).filter((key) => key.revokedAt === undefined && !isUserMadeKey(key));
  }

  #requireRecentPassword(principal: Principal): void {
    const { recentLoginS } = this.#options.settings;
    const startedAt = principal.sessionStartedAtMs;
    if (principal.method !== 'pwd')
      throw gatehouseError('reauthentication_required', { reason: 'a session opened with an API key cannot create keys: log in with your password' });
    if (startedAt === undefined || this.#now() - startedAt > recentLoginS * 1000) {
      throw gatehouseError('reauthentication_required', {
        reason: `creating a key needs a password login from the last ${recentLoginS} seconds: log in again`,
      });
    }
  }

  /** The caller of the account API, when a local user's: another provider's token is refused (401) before anything is read. */
  localCaller(principal: Principal): Principal {
    if (principal.provider !== this.#options.provider) throw gatehouseError('invalid_bearer_token', { reason: "the account is the local users' only" });
    return principal;
  }

  #user(principal: Principal) {
    const user = this.#options.identity.userOf(principal.sub);
    // The bearer rule admitted the token, so the user existed a moment ago: removed since, the token is as good as refused.
    if (!user) throw gatehouseError('invalid_bearer_token', { reason: 'user or API key no longer active' });
    return user;
  }

  #owner(principal: Principal): KeyOwner {
    return { sub: principal.sub, username: this.#user(principal).username };
  }

  /** A store that fails is a 503, not a 500; the service's own refusals pass as they are. */
  async #stored<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (isGatehouseError(error)) throw error;
      throw storeUnavailable(error);
    }
  }
}

function view(key: ApiKeyRecord, managedBy: KeyView['managedBy'], lastUsed: ReadonlyMap<string, number>): KeyView {
  const used = lastUsed.get(key.id);
  return {
    id: key.id,
    label: key.label ?? null,
    createdAt: key.createdAt,
    expiresAt: key.scope?.expiresAt ?? null,
    lastUsedAt: used === undefined ? null : new Date(used).toISOString(),
    scope: {
      roles: key.scope?.roles ?? null,
      scopes: key.scope?.scopes ?? null,
      readOnly: key.scope?.readOnly ?? false,
      ...(key.scope?.dpopJkt !== undefined && { dpopJkt: key.scope.dpopJkt }),
    },
    managedBy,
  };
}

function sessionView(session: SessionRecord, currentSid: string): SessionView {
  return {
    id: session.sid,
    method: session.method === 'api_key' ? 'api_key' : 'password',
    apiKeyId: session.apiKeyId ?? null,
    createdAt: new Date(session.createdAt).toISOString(),
    expiresAt: new Date(session.expiresAt).toISOString(),
    current: session.sid === currentSid,
  };
}
