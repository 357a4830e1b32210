// Signing keys across instances that share a store but no file. Each instance keeps its private key in its own keys
// file (keyset.ts) and publishes the public half, with until when it may verify, through the store; every instance
// verifies with, and its JWKS serves, the union (its peers' as read by peer-keys.ts).
//
// Invariants: no private key leaves its instance (entries may be sealed, shared-key-entry.ts); an instance reads its
// peers' keys as it starts but publishes its own and its view only once its listeners are up (`publish`), so a start
// that failed was never a peer; a new key is taken up in every live instance's view (instance-views.ts) before this
// one signs with it; an unknown kid costs one store read (one in flight, then a cooldown); a key verifies for the
// retention after its last heartbeat or retirement.
// Why: docs/decisions/0016-signing-keys-shared-through-the-store.md
import { EventEmitter } from 'node:events';
import type { CryptoKey, JWK, JWTHeaderParameters, KeyObject } from 'jose';
import type { Logger } from 'pino';
import type { SigningAlgorithm } from '../config/schema.js';
import type { SharedKeyRecords } from '../store/shared-keys.js';
import type { LoadedKey } from './key-material.js';
import { newestUnretired } from './key-policy.js';
import type { KeySet, SigningKey, WatchedKeySet } from './keyset.js';
import { PeerKeys } from './peer-keys.js';
import { EntrySeal, type AcceptedSealSecrets, type InstanceView, type PublishedKey } from './shared-key-entry.js';
import { InstanceViews } from './instance-views.js';
import { TokenError } from './types.js';

export interface SharedKeySetOptions {
  local: WatchedKeySet;
  records: SharedKeyRecords;
  /** This instance's id in the store (unique per process start). */
  instance: string;
  /** The seal secret (`tokens.keySealSecret`, else `requests.serviceToken`): seals and checks entries; absent, the store is trusted as it is. */
  secret: string | undefined;
  /** The seal's next or previous secret, during its rotation: entries they sealed are opened too. */
  acceptedSecrets?: AcceptedSealSecrets;
  /** How long a retired key keeps verifying: the refresh-token lifetime. */
  retainMs: number;
  logger: Logger;
  /** A digest of the users (the file, or the view of the store), told to peers so a divergence is seen. */
  usersDigest?: () => Promise<string | undefined>;
  heartbeatMs?: number;
  /** The longest a rotation waits for every peer to trust its new key. */
  ackTimeoutMs?: number;
  /** After a read for an unknown kid, no other is made for this long. */
  lookupCooldownMs?: number;
  now?: () => number;
}

export interface SharedKeySetEvents {
  /** After every heartbeat: this instance's view, its live peers', and the instances whose sealed entries it cannot open. */
  views: [own: InstanceView, peers: InstanceView[], unopened: string[]];
}

const DEFAULT_HEARTBEAT_MS = 10_000;
const DEFAULT_ACK_TIMEOUT_MS = 5_000;
const DEFAULT_LOOKUP_COOLDOWN_MS = 1_000;

export class SharedKeySet extends EventEmitter<SharedKeySetEvents> implements KeySet {
  readonly #o: Required<Omit<SharedKeySetOptions, 'usersDigest' | 'secret' | 'acceptedSecrets'>> & Pick<SharedKeySetOptions, 'usersDigest'>;
  readonly #seal: EntrySeal;
  readonly views: InstanceViews;
  /** Peers' keys; this instance's own are the local set's. */
  readonly #peers: PeerKeys;
  #jwks: { keys: JWK[] } = { keys: [] };
  #algorithms: SigningAlgorithm[] = [];
  #jwksSource: unknown;
  #lookup: Promise<void> | undefined;
  #nextLookupAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #closed = false;
  /** Whether this instance's keys and view are in the store: only once its listeners are up. */
  #published = false;
  /** The views of the last heartbeat (the first is at `publish`, perhaps before anyone listened for it). */
  lastViews: { own: InstanceView; peers: InstanceView[]; unopened: string[] } | undefined;

  constructor(options: SharedKeySetOptions) {
    super();
    this.#o = {
      heartbeatMs: DEFAULT_HEARTBEAT_MS,
      ackTimeoutMs: DEFAULT_ACK_TIMEOUT_MS,
      lookupCooldownMs: DEFAULT_LOOKUP_COOLDOWN_MS,
      now: Date.now,
      ...options,
    };
    this.#seal = new EntrySeal(options.secret, options.acceptedSecrets);
    this.#peers = new PeerKeys({ records: options.records, seal: this.#seal, local: options.local, logger: options.logger, now: this.#o.now });
    this.views = new InstanceViews({
      records: options.records,
      seal: this.#seal,
      instance: options.instance,
      heartbeatMs: this.#o.heartbeatMs,
      now: this.#o.now,
    });
    this.#rebuild();
  }

  /** Reads its peers' keys and keeps them current; publishes nothing yet (`publish`). Never rejects: a store down now is read again later. */
  async start(): Promise<void> {
    const { local, records, logger } = this.#o;
    if (!this.#seal.authenticated) {
      logger.warn(
        'no tokens.keySealSecret (GATEHOUSE_KEY_SEAL_SECRET) nor requests.serviceToken: public keys shared through the store are not sealed, ' +
          'so whoever can write to Redis can add a key every instance trusts',
      );
    }
    local.setBeforeSigning((keys) => this.#announce(keys));
    this.#unsubscribe = records.onKeysChanged(() => void this.#refreshAndReport());
    await this.#refresh().catch((error: unknown) => logger.warn({ err: error }, 'cannot read the shared signing keys yet; trying again at the first token'));
  }

  /**
   * Once the listeners are up: publishes this instance's keys (trusted by
   * every live peer before it goes on, as in a rotation), then its view, and
   * renews both every heartbeat. Never rejects: a store down now is tried
   * again each heartbeat.
   */
  async publish(): Promise<void> {
    if (this.#published || this.#closed) return;
    this.#published = true;
    try {
      await this.#announce(this.#o.local.verifyingKeys());
    } catch (error) {
      this.#o.logger.warn({ err: error }, "cannot publish this instance's signing key yet; trying again at the next heartbeat");
    }
    await this.#heartbeat();
    this.#timer = setInterval(() => void this.#heartbeat(), this.#o.heartbeatMs).unref();
  }

  get algorithm(): SigningAlgorithm {
    return this.#o.local.algorithm;
  }

  signingKey(): SigningKey {
    return this.#o.local.signingKey();
  }

  async getVerificationKey(header: JWTHeaderParameters): Promise<KeyObject | CryptoKey> {
    const kid = header.kid;
    if (typeof kid === 'string' && this.#o.local.knows(kid)) return this.#o.local.getVerificationKey(header);
    let key = typeof kid === 'string' ? this.#peers.get(kid) : undefined;
    if (key === undefined && typeof kid === 'string') {
      await this.#lookUp();
      key = this.#peers.get(kid);
    }
    if (key === undefined) throw new TokenError('unknown signing key');
    if (header.alg !== key.alg) throw new TokenError('algorithm not allowed');
    return key.publicKey;
  }

  publicJwks(): { keys: JWK[] } {
    this.#rebuildIfLocalChanged();
    return this.#jwks;
  }

  algorithms(): SigningAlgorithm[] {
    this.#rebuildIfLocalChanged();
    return this.#algorithms;
  }

  /** Publishes, reads and reports now rather than at the next heartbeat (tests; the heartbeat does the same); nothing before `publish`. */
  heartbeatNow(): Promise<void> {
    return this.#heartbeat();
  }

  /** Where the users digest told to peers comes from from now on (users in the store: the provider's view, open after the keys). */
  useUsersDigest(digest: () => Promise<string | undefined>): void {
    this.#o.usersDigest = digest;
  }

  /** Calls `listener` after every re-read of this instance's keys file. */
  localReloaded(listener: (applied: boolean) => void): void {
    this.#o.local.on('reload', listener);
  }

  /** Every kid this instance verifies with, sorted. */
  trustedKids(): string[] {
    return [...new Set([...this.#o.local.verifyingKeys().map((k) => k.kid), ...this.#peers.kids()])].sort();
  }

  /** Stops the heartbeat and takes this instance's view out of the store; its keys stay there until they expire. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#unsubscribe?.();
    this.#o.local.close();
    await this.views.withdraw().catch((error: unknown) => this.#o.logger.warn({ err: error }, 'could not withdraw this instance from the store'));
  }

  /** One read of the store in flight at a time, and none again within the cooldown: unknown kids cannot make it a flood. */
  #lookUp(): Promise<void> {
    if (this.#lookup) return this.#lookup;
    if (this.#o.now() < this.#nextLookupAt) return Promise.resolve();
    this.#nextLookupAt = this.#o.now() + this.#o.lookupCooldownMs;
    this.#lookup = this.#refresh()
      .catch((error: unknown) => this.#o.logger.warn({ err: error }, 'cannot read the shared signing keys; the keys in memory stay in use'))
      .finally(() => (this.#lookup = undefined));
    return this.#lookup;
  }

  /** Phase one of a rotation: every key published, the change announced, and every live peer trusting the new signing key. */
  async #announce(keys: readonly LoadedKey[]): Promise<void> {
    const signing = newestUnretired(keys)!;
    await this.#publish(keys);
    await this.#o.records.announceKeysChanged();
    const acknowledged = await this.views.waitForTrust(signing.kid, this.#o.ackTimeoutMs);
    if (acknowledged.missing.length > 0) {
      this.#o.logger.warn(
        { kid: signing.kid, instances: acknowledged.missing },
        'signing with the new key although some instances did not confirm they trust it; they find it in the store at their first token signed with it',
      );
    }
    this.#o.logger.info({ kid: signing.kid, peers: acknowledged.confirmed }, 'new signing key published and trusted by every live instance');
  }

  async #publish(keys: readonly LoadedKey[]): Promise<void> {
    const now = this.#o.now();
    // A signing key may sign until the next heartbeat renews this entry (or the one after, if a heartbeat is late).
    const signingUntil = now + 2 * this.#o.heartbeatMs + this.#o.retainMs;
    for (const key of keys) {
      const entry: PublishedKey = {
        kid: key.kid,
        alg: key.alg,
        jwk: key.publicJwk,
        instance: this.#o.instance,
        verifyUntil: key.retiredAt === undefined ? signingUntil : key.retiredAt + this.#o.retainMs,
      };
      await this.#o.records.putKey(key.kid, this.#seal.seal(entry));
    }
  }

  /** Reads every published key (tokens/peer-keys.ts); the JWKS follows a change. */
  async #refresh(): Promise<void> {
    if (await this.#peers.read()) this.#rebuild();
  }

  async #refreshAndReport(): Promise<void> {
    try {
      await this.#refresh();
      if (!this.#published) return;
      await this.views.write(await this.#ownView());
    } catch (error) {
      this.#o.logger.warn({ err: error }, 'cannot read the shared signing keys; the keys in memory stay in use');
    }
  }

  async #heartbeat(): Promise<void> {
    if (this.#closed || !this.#published) return;
    try {
      await this.#publish(this.#o.local.verifyingKeys());
      await this.#refresh();
      const own = await this.#ownView();
      await this.views.write(own);
      const { live: peers, unopened } = await this.views.read();
      this.lastViews = { own, peers, unopened };
      this.emit('views', own, peers, unopened);
    } catch (error) {
      this.#o.logger.warn({ err: error }, 'cannot share signing keys through the store now; trying again at the next heartbeat');
    }
  }

  async #ownView(): Promise<InstanceView> {
    const users = await this.#o.usersDigest?.();
    return {
      instance: this.#o.instance,
      signing: this.#o.local.signingKey().kid,
      kids: this.trustedKids(),
      ...(users !== undefined && { users }),
      seenAt: this.#o.now(),
    };
  }

  #rebuildIfLocalChanged(): void {
    if (this.#o.local.publicJwks() !== this.#jwksSource) this.#rebuild();
  }

  /** The union: this instance's keys first (its signing key leads), then its peers'. */
  #rebuild(): void {
    const local = this.#o.local.publicJwks();
    this.#jwksSource = local;
    // A key read as a peer's before this instance's own file held it (a rotation on a shared file) is listed once, as its own.
    const peers = this.#peers.all().filter((key) => !this.#o.local.knows(key.kid));
    this.#jwks = Object.freeze({ keys: [...local.keys, ...peers.map((k) => k.publicJwk)] }) as { keys: JWK[] };
    this.#algorithms = Object.freeze([...new Set([...this.#o.local.algorithms(), ...peers.map((k) => k.alg)])]) as SigningAlgorithm[];
  }
}
