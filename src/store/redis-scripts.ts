// Every Lua script the Redis store runs. Each is registered once per client
// with ioredis' defineCommand (EVALSHA, and EVAL when Redis has lost the
// script) and called through a typed wrapper. Each takes one key, so it runs
// in one Cluster slot; PUBLISH takes no key.
//
// A script runs alone in Redis: a write and its announcement, or a check and
// the change it allows, cannot be separated by another client or by a
// failure between them.
import type { RedisClient } from './redis-client.js';
import type { TerminalStatus, TransitionOutcome } from './store.js';

// KEYS[1] the session; ARGV[1] when it expires (epoch ms), then field, value…
// The DEL makes a create a replacement: no field of an older hash survives.
const CREATE_SESSION = `
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
return 1`;

// KEYS[1] the user's sessions: a sorted set of sids by creation time (epoch
// ms), under the user's own hash tag. ARGV: the new sid, its createdAt, its
// expiresAt, the lifetime of a session (ms), the most a user may hold.
// Forgets the sids whose sessions have expired, adds the new one, keeps the
// set as long as its newest session lives, and takes out the oldest sids past
// the cap: the caller ends those sessions (each its own slot in a Cluster)
// with the revocation script, which announces them.
const TRACK_USER_SESSION = `
local createdAt = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (createdAt - tonumber(ARGV[4])))
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) - createdAt then redis.call('PEXPIREAT', KEYS[1], ARGV[3]) end
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[5])
if excess <= 0 then return {} end
local oldest = redis.call('ZRANGE', KEYS[1], 0, excess - 1)
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1)
return oldest`;

// KEYS[1] the session; ARGV: now (epoch ms), the channel, the sid.
// Deletes and announces in one step, so no failure between the two can leave
// a session deleted here but still trusted by the other instances' caches.
// A session past its expiresAt by our clock (Redis may run behind) or one
// that is not a hash this code wrote is deleted, but ended nothing: it is not
// announced, and the answer is 0, as the memory store answers.
const REVOKE_SESSION = `
local expiresAt = nil
if redis.call('TYPE', KEYS[1]).ok == 'hash' then
  expiresAt = tonumber(redis.call('HGET', KEYS[1], 'expiresAt'))
end
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
if expiresAt == nil or expiresAt <= tonumber(ARGV[1]) then return 0 end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`;

// KEYS[1] the record; ARGV[1] its retention (ms), then field, value…
// Like SET NX: whatever holds the key already is left alone, TTL included.
const CREATE_REQUEST = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

// KEYS[1] the record; ARGV: the terminal status, updatedAt (epoch ms, as
// text), the retention (ms), the channel, the announcement. Of two
// concurrent conflicting transitions exactly one finds the record pending.
// A record the store would read as absent (see requestFromHash: a key that
// is not a hash, a field missing, an unknown status, a number that is not
// one) is 'unreadable' and left as it is: what reads as absent must not
// change either.
const TRANSITION_REQUEST = `
local function isDecimal(text)
  local rest = string.match(text, '^%-?%d+(.*)$')
  if rest == nil then return false end
  rest = string.match(rest, '^%.%d+(.*)$') or rest
  rest = string.match(rest, '^e[-+]%d+(.*)$') or rest
  return rest == ''
end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then return 'not_found' end
if kind ~= 'hash' then return 'unreadable' end
local record = redis.call('HMGET', KEYS[1], 'status', 'sub', 'route', 'upstream', 'createdAt', 'updatedAt')
for i = 1, 6 do
  if not record[i] then return 'unreadable' end
end
local status = record[1]
if status ~= 'pending' and status ~= 'completed' and status ~= 'failed' then return 'unreadable' end
if not isDecimal(record[5]) or not isDecimal(record[6]) then return 'unreadable' end
if status == ARGV[1] then return 'already_applied' end
if status ~= 'pending' then return 'conflict' end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'updatedAt', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 'applied'`;

// KEYS[1] the users hash; ARGV: the channel, the announcement, then for each
// user its name, the record expected ('' for none) and the next ('' to
// remove). Every record is compared before any is written: of two changes
// to one user made from the same reading, one applies and the other is told.
const CHANGE_USERS = `
for i = 3, #ARGV, 3 do
  local current = redis.call('HGET', KEYS[1], ARGV[i])
  if current == false then current = '' end
  if current ~= ARGV[i + 1] then return 0 end
end
for i = 3, #ARGV, 3 do
  if ARGV[i + 2] == '' then redis.call('HDEL', KEYS[1], ARGV[i]) else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2]) end
end
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1`;

const SCRIPTS = {
  gatehouseCreateSession: CREATE_SESSION,
  gatehouseRevokeSession: REVOKE_SESSION,
  gatehouseTrackUserSession: TRACK_USER_SESSION,
  gatehouseCreateRequest: CREATE_REQUEST,
  gatehouseTransitionRequest: TRANSITION_REQUEST,
  gatehouseChangeUsers: CHANGE_USERS,
} as const;

/** The commands defineCommand adds to the client; ioredis' own types cannot know them. */
interface ScriptCommands {
  gatehouseCreateSession(key: string, expiresAtMs: number, ...fields: string[]): Promise<number>;
  gatehouseRevokeSession(key: string, nowMs: number, channel: string, sid: string): Promise<number>;
  gatehouseTrackUserSession(key: string, sid: string, createdAt: string, expiresAt: string, lifetimeMs: string, max: number): Promise<unknown>;
  gatehouseCreateRequest(key: string, retentionMs: number, ...fields: string[]): Promise<number>;
  gatehouseTransitionRequest(
    key: string,
    status: TerminalStatus,
    updatedAt: string,
    retentionMs: number,
    channel: string,
    announcement: string,
  ): Promise<unknown>;
  gatehouseChangeUsers(key: string, channel: string, announcement: string, ...changes: string[]): Promise<number>;
}

export type TransitionReply = TransitionOutcome | 'unreadable';

export interface StoreScripts {
  /** Replaces the session's hash with `fields`, expiring at `expiresAtMs`. */
  createSession(key: string, expiresAtMs: number, fields: string[]): Promise<void>;
  /** Deletes the session; true, and announced on `channel`, when it was live at `nowMs`. */
  revokeSession(key: string, nowMs: number, channel: string, sid: string): Promise<boolean>;
  /** Adds the sid to its user's set and returns the sids of the oldest sessions past `max`, to be ended. */
  trackUserSession(key: string, session: { sid: string; createdAt: number; expiresAt: number }, max: number): Promise<string[]>;
  /** Writes the record unless the key exists; true when written. */
  createRequest(key: string, retentionMs: number, fields: string[]): Promise<boolean>;
  transitionRequest(
    key: string,
    change: { status: TerminalStatus; updatedAt: string; retentionMs: number },
    announce: { channel: string; message: string },
  ): Promise<TransitionReply>;
  /** Compares then writes (or removes) each user's record, announced on `channel`; false, nothing written, when one differed. */
  changeUsers(
    key: string,
    changes: ReadonlyArray<{ username: string; expected: string | null; next: string | null }>,
    announce: { channel: string; message: string },
  ): Promise<boolean>;
}

const TRANSITION_REPLIES: ReadonlySet<unknown> = new Set<TransitionReply>(['applied', 'already_applied', 'conflict', 'not_found', 'unreadable']);

/** Registers every script on `client` (once: call this once per client) and returns their typed wrappers. */
export function defineStoreScripts(client: RedisClient): StoreScripts {
  for (const [name, lua] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: 1, lua });
  const commands = client as RedisClient & ScriptCommands;
  return {
    async createSession(key, expiresAtMs, fields) {
      await commands.gatehouseCreateSession(key, expiresAtMs, ...fields);
    },
    async revokeSession(key, nowMs, channel, sid) {
      return (await commands.gatehouseRevokeSession(key, nowMs, channel, sid)) === 1;
    },
    async trackUserSession(key, { sid, createdAt, expiresAt }, max) {
      const lifetimeMs = Math.max(0, expiresAt - createdAt);
      // PEXPIREAT takes whole milliseconds.
      const reply = await commands.gatehouseTrackUserSession(key, sid, String(createdAt), String(Math.ceil(expiresAt)), String(lifetimeMs), max);
      if (!Array.isArray(reply) || !reply.every((sid) => typeof sid === 'string'))
        throw new Error(`unexpected reply from the session tracking script: ${String(reply)}`);
      return reply as string[];
    },
    async createRequest(key, retentionMs, fields) {
      return (await commands.gatehouseCreateRequest(key, retentionMs, ...fields)) === 1;
    },
    async transitionRequest(key, { status, updatedAt, retentionMs }, { channel, message }) {
      const reply = await commands.gatehouseTransitionRequest(key, status, updatedAt, retentionMs, channel, message);
      if (!TRANSITION_REPLIES.has(reply)) throw new Error(`unexpected reply from the transition script: ${String(reply)}`);
      return reply as TransitionReply;
    },
    async changeUsers(key, changes, { channel, message }) {
      const triples = changes.flatMap(({ username, expected, next }) => [username, expected ?? '', next ?? '']);
      return (await commands.gatehouseChangeUsers(key, channel, message, ...triples)) === 1;
    },
  };
}
