// DPoP proofs (RFC 9449 4.3): the JWT a client signs, per request, with the
// private key its tokens are bound to. One check serves token requests
// (login, refresh, /oauth/token: which key to bind) and resource requests
// (every bearer check of a bound token: is this the token's key, for this
// very request).
//
// Invariants: a proof is parsed once; its key is imported once per key
// (proof-signature.ts); each proof costs one signature verification and one
// store write remembering its `jti` on every instance, sent while the
// signature is checked, so a replay is refused wherever it lands; a store that
// cannot be asked fails the request closed (503).
// Why: docs/decisions/0023-dpop-proofs-at-the-price-of-one-verify.md
import { hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LRUCache } from 'lru-cache';
import type { ClientAddress } from '../http/client-address.js';
import type { DpopStore } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import { TokenError } from '../tokens/types.js';
import type { DpopNonces } from './nonces.js';
import { ProofKeys, ProofSignatureError, type ProofKey } from './proof-signature.js';
import { comparableUrl, requestUrl } from './request-url.js';

export interface DpopProofCheckOptions {
  /** `tokens.dpop.algorithms`: asymmetric only (the schema offers no other). */
  algorithms: readonly string[];
  /** `tokens.dpop.proofWindowS`: how far `iat` may be from now, either way. */
  proofWindowS: number;
  store: DpopStore;
  /** Whose X-Forwarded-Proto and -Host are believed (`server.trustedProxies`). */
  clientAddress: Pick<ClientAddress, 'trustsPeer'>;
  /** Server nonces (`tokens.dpop.requireNonce`): absent, proofs need none. */
  nonces?: DpopNonces;
  /** Epoch milliseconds; for tests of the window. */
  now?: () => number;
}

/** What the request's proof must also match. */
export interface ProofExpectation {
  /** The access (or refresh) token presented with the DPoP scheme: the proof's `ath` must be its hash (RFC 9449 4.3 step 11). */
  accessToken?: string;
  /** The thumbprint the token is bound to (`cnf.jkt`): the proof must be signed with that key. */
  jkt?: string;
}

/** A refused proof (a JWT refused, as a token is); `reason` is a fixed text, safe for a client and a metric label. */
export class DpopProofError extends TokenError {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.name = 'DpopProofError';
  }
}

/** A proof without the server's current nonce (RFC 9449 8): refused with the nonce to use (`DPoP-Nonce`). */
export class DpopNonceError extends DpopProofError {
  constructor(readonly nonce: string) {
    super('the DPoP proof needs the server nonce');
    this.name = 'DpopNonceError';
  }
}

/** Far above any proof an honest client makes (an RSA-4096 key and signature fit in 2 KiB); refused before any parsing. */
export const MAX_PROOF_LENGTH = 4096;
const MAX_JTI_LENGTH = 256;
/** Distinct proof headers remembered (each at most MAX_PROOF_LENGTH): a few MiB at worst. */
const HEADERS_REMEMBERED = 1024;
/** Private members of any key type (RFC 7518 6.2.2, 6.3.2, 6.4; RFC 8037 2): a JWK with one is not a public key. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

export class DpopProofCheck {
  readonly algorithms: readonly string[];
  readonly #window: number;
  readonly #store: DpopStore;
  readonly #clientAddress: Pick<ClientAddress, 'trustsPeer'>;
  readonly #now: () => number;
  readonly #nonces: DpopNonces | undefined;
  readonly #keys = new ProofKeys();
  /** Headers already read, by their exact encoding (the same bytes always read the same). */
  readonly #headers = new LRUCache<string, ProofKey>({ max: HEADERS_REMEMBERED });

  constructor(options: DpopProofCheckOptions) {
    this.#nonces = options.nonces;
    this.algorithms = [...options.algorithms];
    this.#window = options.proofWindowS;
    this.#store = options.store;
    this.#clientAddress = options.clientAddress;
    this.#now = options.now ?? Date.now;
  }

  /** Whether the request carries a `DPoP` header at all. */
  static present(req: Pick<IncomingMessage, 'headers'>): boolean {
    return req.headers.dpop !== undefined;
  }

  /**
   * The thumbprint of the key that signed the request's valid proof, after its
   * `jti` was remembered. Throws DpopProofError for a missing or bad proof,
   * `store_unavailable` when the replay memory cannot be asked.
   */
  async check(req: Pick<IncomingMessage, 'headers' | 'socket' | 'url' | 'method'>, expect: ProofExpectation = {}): Promise<string> {
    const proof = req.headers.dpop;
    if (proof === undefined || proof === '') throw new DpopProofError('a DPoP proof is required');
    // Node joins repeated headers with ", "; a compact JWS holds neither, so this is also "more than one DPoP header".
    if (typeof proof !== 'string' || proof.length > MAX_PROOF_LENGTH || !/^[\w-]+\.[\w-]+\.[\w-]+$/.test(proof)) {
      throw new DpopProofError('the DPoP proof is not one compact JWS of a sensible size');
    }
    // Parsed once: the header and the payload are read here and nowhere else.
    const headerEnd = proof.indexOf('.');
    const payloadEnd = proof.indexOf('.', headerEnd + 1);
    const key = this.#keyOf(proof.slice(0, headerEnd));
    if (expect.jkt !== undefined && key.jkt !== expect.jkt) throw new DpopProofError('the DPoP proof is signed with another key than the token is bound to');
    const payload = decodeJson(proof.slice(headerEnd + 1, payloadEnd), 'the DPoP proof payload is not JSON');
    const jti = this.#claims(payload, req, expect);
    // Before the jti is spent: the client signs a new proof with the nonce anyway.
    if (this.#nonces !== undefined && !(await this.#nonces.accepts(payload.nonce))) throw new DpopNonceError(await this.#nonces.current());
    // The replay check goes to the store while the signature is checked here; a proof whose signature fails
    // has spent its jti, which only its key's holder could have used.
    const remembered = this.#remember(key.jkt, jti);
    let valid: boolean;
    try {
      valid = key.verifies(Buffer.from(proof.slice(0, payloadEnd), 'ascii'), Buffer.from(proof.slice(payloadEnd + 1), 'base64url'));
    } catch {
      valid = false;
    }
    if (!valid) {
      remembered.catch(() => undefined);
      throw new DpopProofError('the DPoP proof does not verify with its own key');
    }
    await remembered;
    return key.jkt;
  }

  /** The proof's header: the checks that say precisely what is wrong, and the public key itself. */
  #header(encoded: string): { alg: string; jwk: Record<string, unknown> } {
    const header = decodeJson(encoded, 'the DPoP proof header is not JSON');
    if (header.typ !== 'dpop+jwt') throw new DpopProofError('the DPoP proof typ is not dpop+jwt');
    const { alg, jwk } = header;
    if (typeof alg !== 'string' || !this.algorithms.includes(alg)) throw new DpopProofError('the DPoP proof alg is not one this gateway accepts');
    // RFC 7515 4.1.11: no extension is understood here, so none may be critical (b64: false among them).
    if (header.crit !== undefined) throw new DpopProofError('the DPoP proof names critical header extensions');
    if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) throw new DpopProofError('the DPoP proof carries no jwk');
    if (PRIVATE_MEMBERS.some((member) => Object.hasOwn(jwk, member))) throw new DpopProofError('the DPoP proof jwk holds private key material');
    return { alg, jwk: jwk as Record<string, unknown> };
  }

  /** The key of a proof's header, checked once per distinct header: a client sends the same header with every proof. */
  #keyOf(encodedHeader: string): ProofKey {
    const known = this.#headers.get(encodedHeader);
    if (known !== undefined) return known;
    const { alg, jwk } = this.#header(encodedHeader);
    let key: ProofKey;
    try {
      key = this.#keys.keyFor(alg, jwk);
    } catch (error) {
      if (error instanceof ProofSignatureError) throw new DpopProofError(error.message, { cause: error });
      throw error;
    }
    this.#headers.set(encodedHeader, key);
    return key;
  }

  /** RFC 9449 4.3 steps 8–11 and the `jti`'s shape; returns the `jti`. */
  #claims(payload: Record<string, unknown>, req: Pick<IncomingMessage, 'headers' | 'socket' | 'url' | 'method'>, expect: ProofExpectation): string {
    const { jti, htm, htu, iat, ath } = payload;
    if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) throw new DpopProofError('the DPoP proof has no usable jti');
    if (htm !== req.method) throw new DpopProofError('the DPoP proof htm is not the request method');
    const expected = requestUrl(req, this.#clientAddress);
    if (typeof htu !== 'string' || expected === null || comparableUrl(htu) !== expected) throw new DpopProofError('the DPoP proof htu is not the request URL');
    if (typeof iat !== 'number' || !Number.isFinite(iat)) throw new DpopProofError('the DPoP proof has no iat');
    if (Math.abs(this.#now() / 1000 - iat) > this.#window) throw new DpopProofError('the DPoP proof iat is outside the accepted window');
    if (expect.accessToken !== undefined) {
      if (ath !== hash('sha256', expect.accessToken, 'base64url')) throw new DpopProofError('the DPoP proof ath is not the hash of the token');
    }
    return jti;
  }

  /** RFC 9449 11.1: a `jti` accepted once, on any instance, is refused for as long as its proof could pass the window. */
  async #remember(jkt: string, jti: string): Promise<void> {
    // Per key (two clients may well pick the same jti), and digested: a client's jti never becomes a Redis key as it is.
    const id = hash('sha256', `${jkt}\n${jti}`, 'base64url');
    let first: boolean;
    try {
      first = await this.#store.rememberDpopProof(id, 2 * this.#window * 1000);
    } catch (error) {
      throw storeUnavailable(error);
    }
    if (!first) throw new DpopProofError('the DPoP proof was used before');
  }
}

/** A base64url part of the proof as a JSON object, or the refusal `reason`. */
function decodeJson(part: string, reason: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    throw new DpopProofError(reason);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new DpopProofError(reason);
  return value as Record<string, unknown>;
}

/** RFC 9449 7.1: the challenge of a 401 that a DPoP-bound token, or a proof, caused. */
export function dpopChallenge(error: 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce', description: string, algorithms: readonly string[]): string {
  return `DPoP error="${error}", error_description="${description.replace(/["\\]/g, '')}", algs="${algorithms.join(' ')}"`;
}
