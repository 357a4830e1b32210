// The shared state of a Gatehouse deployment, one interface per concern
// (sessions, provider sessions, DPoP, request records, and the parts only a
// shared store keeps), each with two implementations: Redis (production;
// shared by every instance, durable) and in-memory (the embedded default; one
// process only, lost on restart). `Store` is all of them, for the assembly;
// every other module asks for the concern it uses.
//
// Designed for Redis Cluster from the start: every record lives under keys
// that share one hash tag, and no operation touches more than one slot.

import type { AuthMethod } from '../core/vocabulary.js';
import type { ApiKeyRecords } from './api-key-records.js';
import type { AuditTrailRecords } from './audit-records.js';
import type { MasterEvictionPolicy } from './eviction-policy.js';
import type { IntrospectionAnswers } from './introspection-answers.js';
import type { RateLimiterBackend } from './rate-limiters.js';
import type { QuotaCounters } from './quota-counters.js';
import type { SharedKeyRecords } from './shared-keys.js';
import type { UserRecords } from './user-records.js';

/** One login: every token issued for it carries its id as `sid`. */
export interface SessionRecord {
  sid: string;
  sub: string;
  username: string;
  method: AuthMethod;
  /** The API key's id when `method` is `api_key`: revoking the key ends the session. */
  apiKeyId?: string;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds; the store forgets the session then. */
  expiresAt: number;
}

export type RevocationListener = (sid: string) => void;

/** Spec 2.6 and 3: the states of an asynchronous operation. */
export type RequestStatus = 'pending' | 'completed' | 'failed';
export type TerminalStatus = Exclude<RequestStatus, 'pending'>;

/** An asynchronous operation an upstream accepted with 202 and a requestId. */
export interface RequestRecord {
  /** The upstream's requestId (a UUID, lower-cased). */
  id: string;
  status: RequestStatus;
  /** The subject of the caller who made the request: the only one who may see it. */
  sub: string;
  /** The route's name and the upstream target that answered the 202. */
  route: string;
  upstream: string;
  /** The upstream's own status URL for this request, when the route names a template. */
  statusUrl?: string;
  /** Epoch milliseconds. */
  createdAt: number;
  updatedAt: number;
}

/**
 * What a status transition did. States move only pending → completed or
 * pending → failed; a terminal state never changes again.
 */
export type TransitionOutcome =
  /** pending → the new state. */
  | 'applied'
  /** Already in that terminal state: an idempotent repeat. */
  | 'already_applied'
  /** Already in the other terminal state: refused. */
  | 'conflict'
  /** No such record (never made, or expired). */
  | 'not_found';

export interface RequestStatusChange {
  id: string;
  status: TerminalStatus;
}

/*
 * What only a shared store keeps, each over the store's own connection and in
 * its keyspace (keyspace.ts). Absent on the in-memory store, where each
 * feature keeps its own in the process instead (or, for users' API keys, in
 * the users file): rate-limiters.ts's rateLimitersOf chooses the limiters.
 */

/** Rate limiter counters (limits/), beside the store's records. */
export interface LimitsStore {
  readonly rateLimiters?: RateLimiterBackend;
  /** Quota counters shared by every instance (Redis); absent: each instance counts in memory (quota-counters.ts). */
  readonly quotaCounters?: QuotaCounters;
}

/** The keys users make for themselves (account/). */
export interface ApiKeysStore {
  readonly apiKeys?: ApiKeyRecords;
}

/** A fronted provider's introspection answers (oidc/). */
export interface IntrospectionStore {
  readonly introspectionAnswers?: IntrospectionAnswers;
}

/**
 * Public signing keys and views published by every instance (tokens/shared-keyset.ts).
 * The in-memory store has them too, shared only by gateways handed the same store.
 */
export interface KeysStore {
  readonly sharedKeys?: SharedKeyRecords;
}

/** The users, when the config holds them in the store (`identity.usersIn: store`, users/store-users.ts). */
export interface UsersStore {
  readonly users?: UserRecords;
}

/** The deployment's audit trail (audit/); absent on the in-memory store, whose trail is a local file. */
export interface AuditStore {
  readonly auditTrail?: AuditTrailRecords;
}

/** Which store this is, whether it answers, and its end. */
export interface StoreLifecycle {
  readonly kind: 'memory' | 'redis';
  /** Resolves when the store answers; rejects otherwise (readiness). */
  ping(): Promise<void>;
  /** Each Redis master's `maxmemory-policy` as last read (eviction-policy.ts); absent: nothing can evict (in-memory). */
  evictionPolicies?(): readonly MasterEvictionPolicy[];
  close(): Promise<void>;
}

/** The feed that brings other instances' announcements (revocations, status changes) to this one. */
export interface StoreFeed {
  /**
   * Called when the feed of revocations from other instances was interrupted
   * and is flowing again (a Redis reconnect): revocations may have been missed
   * meanwhile, so anything cached on the strength of them must be dropped.
   * Never called by a store that has no such feed (in-memory).
   */
  onRevocationFeedResumed(listener: () => void): () => void;
  /**
   * True while the feed is interrupted and not yet resumed (its stores may
   * answer again before it does). Absent: a store whose feed never breaks.
   */
  revocationFeedInterrupted?(): boolean;
}

/** The gateway's own logins. */
export interface SessionStore extends StoreFeed {
  /** Records a new session, kept until its `expiresAt`. */
  createSession(session: SessionRecord): Promise<void>;
  /** The session, or null when it never existed, expired or was revoked. */
  getSession(sid: string): Promise<SessionRecord | null>;
  /** The user's live sessions, oldest first (the account page lists them). */
  listSessions(sub: string): Promise<SessionRecord[]>;
  /**
   * Ends a session at once and tells every instance (`onSessionRevoked`).
   * Resolves true when there was an active session to end.
   */
  revokeSession(sid: string): Promise<boolean>;
  /**
   * Called on this and on every other instance sharing the store when a
   * session is revoked; it may be called more than once for one sid. Returns a
   * function that removes the listener.
   */
  onSessionRevoked(listener: RevocationListener): () => void;
}

/** Sessions at a fronted OpenID Provider that ended here, and its back-channel logout tokens. */
export interface ProviderSessionStore {
  /**
   * Ends, here, a session that lives elsewhere (at a fronted OpenID Provider,
   * whose tokens Gatehouse verifies but did not issue): tokens naming `sid`
   * are refused until `untilMs`, when they have run out anyway. Announced to
   * every instance like a revocation (`onSessionRevoked`).
   */
  endProviderSession(sid: string, untilMs: number): Promise<void>;
  /** True when `endProviderSession` ended `sid` and its time is not over. */
  providerSessionEnded(sid: string): Promise<boolean>;
  /**
   * Remembers the id of a provider's back-channel logout token for `ttlMs`,
   * on every instance: true the first time, false for a replay of a token
   * seen in that time (by any instance). Atomic: of two concurrent uses, one wins.
   */
  rememberLogoutToken(id: string, ttlMs: number): Promise<boolean>;
}

/** DPoP (RFC 9449): proofs seen, and the server nonce every instance hands out. */
export interface DpopStore {
  /**
   * Remembers the `jti` of a DPoP proof (RFC 9449 11.1) for `ttlMs`, on every
   * instance: true the first time, false for a replay of a proof seen in that
   * time (by any instance). Atomic: of two concurrent uses, one wins. The
   * in-memory store remembers a bounded number (the oldest go first).
   */
  rememberDpopProof(jti: string, ttlMs: number): Promise<boolean>;
  /**
   * The DPoP server nonce (RFC 9449 8) of a time epoch, the same on every
   * instance: `candidate` when this is the first call for the epoch (kept for
   * `ttlMs`), otherwise the value the first caller stored.
   */
  shareDpopNonce(epoch: number, candidate: string, ttlMs: number): Promise<string>;
}

/** Second factors: the one-time codes used, so none is taken twice (RFC 6238 5.2). */
export interface SecondFactorStore {
  /**
   * Remembers a used one-time code (its user and time step, never the code
   * itself) for `ttlMs`, on every instance: true the first time, false when
   * any instance took it in that time. Atomic: of two concurrent uses, one wins.
   */
  rememberOneTimeCode(id: string, ttlMs: number): Promise<boolean>;
}

/** The records of asynchronous operations (202s) and their status changes. */
export interface RequestRecordStore extends StoreFeed {
  /**
   * Records a new asynchronous request, kept for `retentionMs`. Resolves
   * false (and changes nothing) when a record with that id exists already.
   */
  createRequest(record: RequestRecord, retentionMs: number): Promise<boolean>;
  getRequest(id: string): Promise<RequestRecord | null>;
  /**
   * Moves a pending record to a terminal state, atomically: of two concurrent
   * conflicting transitions exactly one is applied. An applied transition
   * keeps the record for `retentionMs` from now and is announced to every
   * instance (`onRequestStatusChanged`).
   */
  transitionRequest(id: string, status: TerminalStatus, retentionMs: number, now?: number): Promise<TransitionOutcome>;
  /** Called on this and every other instance when a transition is applied. */
  onRequestStatusChanged(listener: (change: RequestStatusChange) => void): () => void;
}

/** Every concern at once: what the assembly creates and hands out, one concern to each module. */
export interface Store
  extends
    StoreLifecycle,
    SessionStore,
    ProviderSessionStore,
    DpopStore,
    SecondFactorStore,
    RequestRecordStore,
    LimitsStore,
    ApiKeysStore,
    IntrospectionStore,
    KeysStore,
    UsersStore,
    AuditStore {}
