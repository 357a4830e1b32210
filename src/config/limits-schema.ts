// The `limits` section of the config schema: sessions per user, the in-memory
// store's bounds, password hashing and login throttling; its flood defences
// (abuse, loadShedding) are flood-schema.ts's.
import { z } from 'zod';
import * as d from './defaults.js';
import { AbuseLimitsSchema, LoadSheddingSchema } from './flood-schema.js';
import { positiveInt } from './schema-primitives.js';

/**
 * Password hashing (scrypt) shares libuv's thread pool with DNS and file
 * reads: at most `concurrency` hashes run at once, the rest wait in a queue
 * per client address served round-robin; past the bounds a login is refused
 * at once with Retry-After (429 for a full address queue, 503 for a full total).
 */
export const PasswordHashingSchema = z.strictObject({
  /**
   * Password checks (scrypt) running at once.
   * @default cores − 1, at most UV_THREADPOOL_SIZE − 1; at least 1 (1 on a 2-core machine)
   */
  concurrency: positiveInt.default(d.defaultPasswordHashingConcurrency),
  /** Password checks waiting, all client addresses together; past it a login gets 503 with `Retry-After` at once. */
  maxQueue: z.number().int().min(0).default(d.DEFAULT_PASSWORD_HASHING_MAX_QUEUE),
  /** Password checks waiting from one client address; past it that address gets 429 with `Retry-After` at once. */
  maxQueuePerAddress: z.number().int().min(0).default(d.DEFAULT_PASSWORD_HASHING_MAX_QUEUE_PER_ADDRESS),
  /** The `Retry-After` of those refusals. */
  retryAfterS: positiveInt.default(d.DEFAULT_PASSWORD_HASHING_RETRY_AFTER_S),
});

/** Throttling of failed logins, at the login and token endpoints and of refreshes (src/limits/login-throttle.ts); see docs/operations/security.md. */
export const LoginLimitsSchema = z.strictObject({
  /** Throttle at all. */
  enabled: z.boolean().default(true),
  /** Failures of one username from one address that cost nothing; each one after them makes the pair wait. */
  freeFailures: positiveInt.default(d.DEFAULT_LOGIN_FREE_FAILURES),
  /** The first wait of a username+address pair; each further failure doubles it, up to `maxWaitS`. */
  firstWaitS: positiveInt.default(d.DEFAULT_LOGIN_FIRST_WAIT_S),
  /** The longest wait of a pair, however many failures. */
  maxWaitS: positiveInt.default(d.DEFAULT_LOGIN_MAX_WAIT_S),
  /** How long a failure is remembered, for every count below. */
  failureWindowS: positiveInt.default(d.DEFAULT_LOGIN_FAILURE_WINDOW_S),
  /** Failed logins, refreshes and passkey answers one address may make (any usernames: spraying) before it is blocked for `addressBlockS`. */
  failuresPerAddress: positiveInt.default(d.DEFAULT_LOGIN_FAILURES_PER_ADDRESS),
  /** How long an address past `failuresPerAddress` is blocked. */
  addressBlockS: positiveInt.default(d.DEFAULT_LOGIN_ADDRESS_BLOCK_S),
  /**
   * Failures one username may take from all addresses together (distributed
   * guessing); past it, only addresses without recent failures may try it.
   */
  failuresPerUsername: positiveInt.default(d.DEFAULT_LOGIN_FAILURES_PER_USERNAME),
});

/** Bounds on what users, the in-memory store and password checks may take. */
export const LimitsSchema = z.strictObject({
  /** Live sessions of one user; a login past it ends the oldest session. */
  maxSessionsPerUser: positiveInt.default(d.DEFAULT_MAX_SESSIONS_PER_USER),
  /** Sessions the in-memory store holds at most; past it the oldest go, with a warning (Redis has its own memory policy). */
  memoryMaxSessions: positiveInt.default(d.DEFAULT_MEMORY_MAX_SESSIONS),
  /** Request records the in-memory store holds at most; past it the oldest go, with a warning. */
  memoryMaxRequests: positiveInt.default(d.DEFAULT_MEMORY_MAX_REQUESTS),
  passwordHashing: PasswordHashingSchema.prefault({}),
  login: LoginLimitsSchema.prefault({}),
  abuse: AbuseLimitsSchema.prefault({}),
  loadShedding: LoadSheddingSchema.prefault({}),
});
