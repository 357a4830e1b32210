// What one instance writes to the store about its keys, and how another reads
// it back. Each instance's private key stays on it; only public keys (and
// until when each may verify) are published. Anyone who can write to Redis
// could write an entry, and a key planted there would let them sign tokens
// every instance accepts: so each entry carries an HMAC under a key derived
// from the seal secret (`tokens.keySealSecret`, else `requests.serviceToken`:
// the same on every instance, from the environment, never in Redis), and an
// entry without a valid one is ignored. Without a secret the store is trusted
// as it is; the gateway warns at start (shared-keyset.ts). While the seal is
// rotated, a next or a previous secret also opens entries; only the current
// one seals (docs/operations/rotations.md).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { calculateJwkThumbprint, importJWK, type CryptoKey, type JWK } from 'jose';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../config/schema.js';
import { publicMembers } from './key-material.js';

const ENTRY_VERSION = 1;
/** Domain separation: a secret used elsewhere too (the service token) gives a MAC key of its own. */
const MAC_CONTEXT = 'gatehouse shared signing keys v1';

/** A public key as an instance publishes it. Times are epoch milliseconds. */
export interface PublishedKey {
  kid: string;
  alg: SigningAlgorithm;
  /** Public members only. */
  jwk: JWK;
  /** The instance that holds its private key. */
  instance: string;
  /** Until when a token it signed may be valid: peers drop it then. */
  verifyUntil: number;
}

/** What an instance trusts and serves, as it tells its peers. */
export interface InstanceView {
  instance: string;
  /** The kid this instance signs with. */
  signing: string;
  /** Every kid it verifies, sorted. */
  kids: string[];
  /** A digest of its users (its users file, or with users in the store its view of them), when it has local users. */
  users?: string;
  /** When it wrote this view (epoch ms): a view not renewed is of an instance gone. */
  seenAt: number;
}

/** A published key, checked and imported. */
export interface PeerKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly publicKey: CryptoKey;
  /** The key's JWKS entry: public members with `kid`, `alg` and `use: 'sig'`. */
  readonly publicJwk: JWK;
  readonly verifyUntil: number;
  readonly instance: string;
}

/** Which of the configured secrets an entry's seal was made with. */
export type SealRole = 'current' | 'next' | 'previous';

/** The secrets that open entries besides the one that seals: the two phases of a rotation of the seal. */
export interface AcceptedSealSecrets {
  /** Phase one: the new secret, accepted before any instance seals with it. */
  next?: string | undefined;
  /** Phase two: the old secret, still accepted while instances that seal with it remain. */
  previous?: string | undefined;
}

export class EntrySeal {
  /** The sealing key first. */
  readonly #macKeys: ReadonlyArray<{ role: SealRole; key: Buffer }>;

  /** `secret`: the one that seals (`tokens.keySealSecret`, else `requests.serviceToken`); absent, entries are neither sealed nor checked. */
  constructor(secret: string | undefined, accepted: AcceptedSealSecrets = {}) {
    const secrets: Array<[SealRole, string | undefined]> =
      secret === undefined
        ? []
        : [
            ['current', secret],
            ['next', accepted.next],
            ['previous', accepted.previous],
          ];
    this.#macKeys = secrets.flatMap(([role, value]) => (value === undefined ? [] : [{ role, key: macKeyOf(value) }]));
  }

  get authenticated(): boolean {
    return this.#macKeys.length > 0;
  }

  seal(body: PublishedKey | InstanceView): string {
    const payload = JSON.stringify(body);
    const sealing = this.#macKeys[0];
    return JSON.stringify({ v: ENTRY_VERSION, payload, ...(sealing && { mac: mac(sealing.key, payload) }) });
  }

  /** The entry's body, or null when it is not one this version wrote or its MAC is missing or wrong. */
  open(text: string): Record<string, unknown> | null {
    return this.openSealed(text)?.body ?? null;
  }

  /** The entry's body and the secret whose seal it carries (undefined when entries are not sealed); null as for `open`. */
  openSealed(text: string): { body: Record<string, unknown>; role: SealRole | undefined } | null {
    const outer = parseObject(text);
    if (outer === null || outer.v !== ENTRY_VERSION || typeof outer.payload !== 'string') return null;
    let role: SealRole | undefined;
    if (this.#macKeys.length > 0) {
      if (typeof outer.mac !== 'string') return null;
      const given = Buffer.from(outer.mac);
      for (const { role: candidate, key } of this.#macKeys) {
        const expected = Buffer.from(mac(key, outer.payload));
        if (given.length === expected.length && timingSafeEqual(given, expected)) role ??= candidate;
      }
      if (role === undefined) return null;
    }
    const body = parseObject(outer.payload);
    return body === null ? null : { body, role };
  }
}

/**
 * What an entry says, its seal unchecked: only to name, in an alarm, the
 * instance whose entries this one cannot open. Never trusted for anything else.
 */
export function unsealedClaim(text: string): Record<string, unknown> | null {
  const outer = parseObject(text);
  return outer === null || typeof outer.payload !== 'string' ? null : parseObject(outer.payload);
}

/** Domain separation: the MAC key is not the secret itself (which, derived, is the internal API's bearer token). */
function macKeyOf(secret: string): Buffer {
  return createHmac('sha256', secret).update(MAC_CONTEXT).digest();
}

function mac(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(payload).digest('base64url');
}

/** The key an entry publishes, imported; null when the entry is not a well-formed key whose kid is its thumbprint. */
export async function importPublishedKey(body: Record<string, unknown>): Promise<PeerKey | null> {
  const { kid, alg, jwk, instance, verifyUntil } = body;
  if (typeof kid !== 'string' || typeof instance !== 'string' || typeof verifyUntil !== 'number') return null;
  if (!(SIGNING_ALGORITHMS as readonly unknown[]).includes(alg) || typeof jwk !== 'object' || jwk === null) return null;
  try {
    const members = publicMembers(jwk as JWK);
    // The kid names the key: an entry cannot pass one key off under another's kid.
    if ((await calculateJwkThumbprint(members)) !== kid) return null;
    const publicKey = (await importJWK(members, alg as SigningAlgorithm)) as CryptoKey;
    return {
      kid,
      alg: alg as SigningAlgorithm,
      publicKey,
      publicJwk: Object.freeze({ ...members, kid, alg: alg as SigningAlgorithm, use: 'sig' }),
      verifyUntil,
      instance,
    };
  } catch {
    return null;
  }
}

export function readInstanceView(body: Record<string, unknown>): InstanceView | null {
  const { instance, signing, kids, users, seenAt } = body;
  if (typeof instance !== 'string' || typeof signing !== 'string' || typeof seenAt !== 'number') return null;
  if (!Array.isArray(kids) || !kids.every((k) => typeof k === 'string')) return null;
  if (users !== undefined && typeof users !== 'string') return null;
  return { instance, signing, kids: kids as string[], ...(users !== undefined && { users }), seenAt };
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
