// What one instance writes to the store about its keys, and how another reads
// it back. Each instance's private key stays on it; only public keys (and
// until when each may verify) are published. Anyone who can write to Redis
// could write an entry, and a key planted there would let them sign tokens
// every instance accepts: so with `requests.serviceToken` configured (the
// same secret on every instance, from the environment, never in Redis) each
// entry carries an HMAC under a key derived from it, and an entry without a
// valid one is ignored. Without the secret the store is trusted as it is;
// the gateway warns at start (shared-keyset.ts).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { calculateJwkThumbprint, importJWK, type CryptoKey, type JWK } from 'jose';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../config/schema.js';
import { publicMembers } from './key-material.js';

const ENTRY_VERSION = 1;
/** Domain separation: the MAC key is not the bearer token the internal API takes. */
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

export class EntrySeal {
  readonly #macKey: Buffer | undefined;

  /** `secret`: `requests.serviceToken`; absent, entries are neither sealed nor checked. */
  constructor(secret: string | undefined) {
    this.#macKey = secret === undefined ? undefined : createHmac('sha256', secret).update(MAC_CONTEXT).digest();
  }

  get authenticated(): boolean {
    return this.#macKey !== undefined;
  }

  seal(body: PublishedKey | InstanceView): string {
    const payload = JSON.stringify(body);
    return JSON.stringify({ v: ENTRY_VERSION, payload, ...(this.#macKey && { mac: this.#mac(payload) }) });
  }

  /** The entry's body, or null when it is not one this version wrote or its MAC is missing or wrong. */
  open(text: string): Record<string, unknown> | null {
    const outer = parseObject(text);
    if (outer === null || outer.v !== ENTRY_VERSION || typeof outer.payload !== 'string') return null;
    if (this.#macKey) {
      if (typeof outer.mac !== 'string') return null;
      const expected = Buffer.from(this.#mac(outer.payload));
      const given = Buffer.from(outer.mac);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    }
    return parseObject(outer.payload);
  }

  #mac(payload: string): string {
    return createHmac('sha256', this.#macKey!).update(payload).digest('base64url');
  }
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
