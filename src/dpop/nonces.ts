// Server-provided nonces for DPoP proofs (RFC 9449 8): a value the server
// hands out (`DPoP-Nonce`) that each proof must carry, so a proof signed ahead
// of time, by a client that no longer holds the key, goes stale with it.
//
// Every instance must accept the same nonce, so the value lives in the store:
// time is cut into epochs of `rotateS`, and the first instance to need an
// epoch's nonce writes a random one (SET NX); every other reads that one. The
// current epoch's nonce and the previous one's are accepted, so a client that
// fetched a nonce just before a rotation is not refused at once. Each epoch's
// value is asked of the store once per instance and kept in memory.
import { randomBytes } from 'node:crypto';
import type { DpopStore } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';

export interface DpopNoncesOptions {
  store: DpopStore;
  /** `tokens.dpop.nonceRotateS`: how long one nonce is handed out. */
  rotateS: number;
  /** Epoch milliseconds; for tests of rotation. */
  now?: () => number;
}

/** Epochs kept in memory: the current one, the previous one, and one being fetched at a rotation. */
const KEPT_EPOCHS = 3;

export class DpopNonces {
  readonly #store: DpopStore;
  readonly #rotateMs: number;
  readonly #now: () => number;
  readonly #byEpoch = new Map<number, Promise<string>>();

  constructor(options: DpopNoncesOptions) {
    this.#store = options.store;
    this.#rotateMs = options.rotateS * 1000;
    this.#now = options.now ?? Date.now;
  }

  /** The nonce to hand out now (`DPoP-Nonce`). Rejects with `store_unavailable` when the store cannot be asked. */
  current(): Promise<string> {
    return this.#of(Math.floor(this.#now() / this.#rotateMs));
  }

  /** Whether a proof's `nonce` claim is the current nonce or the previous one. */
  async accepts(nonce: unknown): Promise<boolean> {
    if (typeof nonce !== 'string' || nonce === '') return false;
    const epoch = Math.floor(this.#now() / this.#rotateMs);
    const [current, previous] = await Promise.all([this.#of(epoch), this.#of(epoch - 1)]);
    return nonce === current || nonce === previous;
  }

  #of(epoch: number): Promise<string> {
    let value = this.#byEpoch.get(epoch);
    if (value === undefined) {
      // Kept for three epochs in the store: the last one in which it is accepted, with room to spare.
      value = this.#store.shareDpopNonce(epoch, randomBytes(18).toString('base64url'), 3 * this.#rotateMs).catch((error: unknown) => {
        this.#byEpoch.delete(epoch); // asked again next time, not remembered as failed
        throw storeUnavailable(error);
      });
      this.#byEpoch.set(epoch, value);
      for (const kept of this.#byEpoch.keys()) if (kept < epoch - KEPT_EPOCHS + 1) this.#byEpoch.delete(kept);
    }
    return value;
  }
}
