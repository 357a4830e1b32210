// Every name Gatehouse gives a Redis key or pub/sub channel, and nowhere else:
// code that needs a key asks this module for it.
//
// Every name starts with the configured prefix (`store.keyPrefix`), so that
// deployments can share one Redis. Built for Redis Cluster: the keys of one
// record carry its id as a hash tag (`{…}`), so each record lives in one
// slot; the keys that hold one value each (introspection answers, rate
// limiter counters) need none.
//
// These strings are what earlier versions wrote: renaming one orphans the
// data under the old name (test/store/keyspace.test.ts pins each of them).

export class Keyspace {
  /** `store.keyPrefix`: put in front of every key and channel. */
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** A session's hash; the `{sid}` hash tag keeps everything about one session in one slot. */
  session(sid: string): string {
    return `${this.prefix}session:{${sid}}`;
  }

  /** A fronted provider's session ended here (a flag that expires with its tokens). */
  endedProviderSession(sid: string): string {
    return `${this.prefix}ended-session:{${sid}}`;
  }

  /** A provider's back-channel logout token seen here (its issuer and `jti`), kept until it is too old to be accepted. */
  logoutToken(id: string): string {
    return `${this.prefix}logout-token:{${id}}`;
  }

  /** The DPoP server nonce of one time epoch, written once by the first instance that needs it. */
  dpopNonce(epoch: number): string {
    return `${this.prefix}dpop-nonce:${epoch}`;
  }

  /** A DPoP proof's `jti` seen by any instance, kept as long as a proof with it could still be accepted (RFC 9449 11.1). */
  dpopProof(jti: string): string {
    return `${this.prefix}dpop-jti:{${jti}}`;
  }

  /** A one-time code taken by any instance (its user and time step), kept while the code could still be accepted. */
  oneTimeCode(id: string): string {
    return `${this.prefix}otp-used:{${id}}`;
  }

  /** A user's sessions, a sorted set by creation time; the `{sub}` hash tag gives each user's set one slot. */
  userSessions(sub: string): string {
    return `${this.prefix}user-sessions:{${sub}}`;
  }

  /** An asynchronous request's record; the `{id}` hash tag: one record, one slot. */
  request(id: string): string {
    return `${this.prefix}request:{${id}}`;
  }

  /** A user's own API key: its owner and its record. */
  apiKey(keyId: string): string {
    return `${this.prefix}apikey:{${keyId}}`;
  }

  /** The ids of a user's own API keys (a set). */
  userApiKeys(sub: string): string {
    return `${this.prefix}user-apikeys:{${sub}}`;
  }

  /** When an API key was last used to log in. */
  apiKeyLastUse(keyId: string): string {
    return `${this.prefix}apikey-used:{${keyId}}`;
  }

  /** A provider's introspection answer, by a digest of the token (never the token itself). */
  introspection(tokenDigest: string): string {
    return `${this.prefix}introspection:${tokenDigest}`;
  }

  /**
   * The prefix of one rate limiter's counters, as rate-limiter-flexible takes
   * it (`keyPrefix`): it adds `:` and the counter's key (see limiterCounter).
   */
  limiterPrefix(name: string): string {
    return `${this.prefix}limits:${name}`;
  }

  /** One counter of a rate limiter, as rate-limiter-flexible names it. */
  limiterCounter(name: string, key: string): string {
    return `${this.limiterPrefix(name)}:${key}`;
  }

  /**
   * One quota counter (limits/quotas/): the consumer it counts is the hash tag,
   * so all of one consumer's counters share a slot; `counter` names the route,
   * the limit and (for calendar quotas) the window. Both come escaped of `{}`.
   */
  quotaCounter(consumer: string, counter: string): string {
    return `${this.prefix}quota:{${consumer}}:${counter}`;
  }

  /** Every instance's public signing keys, a hash by kid (each entry sealed by the tokens layer). */
  /** The deployment's audit trail: one stream, one slot. */
  auditTrail(): string {
    return `${this.prefix}audit-trail`;
  }

  get signingKeys(): string {
    return `${this.prefix}signing-keys`;
  }

  /** Every instance's view of the keys and users it trusts, a hash by instance id. */
  get instances(): string {
    return `${this.prefix}instances`;
  }

  /**
   * The users when they are held in the store (`identity.usersIn: store`): a
   * hash of each user's record (JSON) by user name. One key, one slot: a change
   * to several users is one atomic script.
   */
  get users(): string {
    return `${this.prefix}users`;
  }

  /**
   * Says what became of the users held in the store: `seeded` once they were
   * first written, `lost` once an instance found them gone (users/
   * store-users.ts). In the users' hash slot, so one script reads and writes
   * both on Redis Cluster: `users` carries no hash tag of its own unless the
   * prefix gives it one, so the marker's tag is the users key's whole name
   * (which fails only for a prefix with a `}` outside a tag, such as `{}`).
   */
  get usersMarker(): string {
    return hasHashTag(this.users) ? `${this.users}-marker` : `{${this.users}}:marker`;
  }

  /** Where a change to the users held in the store is announced (the message: the user names, which nobody trusts: the store is read again). */
  get usersChangedChannel(): string {
    return `${this.prefix}users-changed`;
  }

  /** Where an instance announces that signing keys changed (the message carries nothing). */
  get keysChangedChannel(): string {
    return `${this.prefix}keys-changed`;
  }

  /** Where a session's end is announced to every instance (the message: its sid). */
  get revocationChannel(): string {
    return `${this.prefix}revocations`;
  }

  /** Where a request's status change is announced to every instance (the message: JSON). */
  get requestStatusChannel(): string {
    return `${this.prefix}request-status`;
  }
}

/** Redis Cluster hashes only what lies between the first `{` and the first `}` after it, when that is not empty. */
function hasHashTag(key: string): boolean {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1;
}
