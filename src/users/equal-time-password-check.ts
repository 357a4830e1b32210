// A password check whose time does not tell whether the username exists: a
// known user's hash is verified (scrypt, in the hashing queue's turn for the
// client's address); an unknown name gets a stand-in as long as a real check
// takes now, in the same queue turn (scrypt-stand-in.ts), and never matches.
// The stand-in's hash costs what most users' hashes cost: a stand-in dearer or
// cheaper than the real checks would tell unknown names from known ones.
import { decode } from '../core/password-hash-format.js';
import { DEFAULT_SCRYPT_PARAMS, hashPassword, verifyPassword, type ScryptParams } from './passwords.js';
import type { HashingQueue, PasswordCheckOptions, PasswordVerifier } from './password-check-options.js';
import { ScryptDurations, standInWait } from './scrypt-stand-in.js';

/** The parameters part of an encoded hash (`scrypt$ln=15,r=8,p=1`): what a check against it costs. */
const costOf = (encoded: string) => encoded.slice(0, encoded.indexOf('$', encoded.indexOf('$') + 1));

export class EqualTimePasswordCheck {
  /** Verified in place of a missing user's hash now and then, so the stand-in's durations stay a real scrypt's. */
  readonly #dummyHash: string;
  /** The stand-in hash's parameters: checks at this cost time the stand-in of an unknown name. */
  readonly #dummyCost: string;
  readonly #durations: ScryptDurations;
  readonly #verifyPassword: PasswordVerifier;
  readonly #hashing: HashingQueue | undefined;

  private constructor(dummy: { hash: string; ms: number }, options: PasswordCheckOptions) {
    this.#dummyHash = dummy.hash;
    this.#dummyCost = costOf(dummy.hash);
    this.#durations = new ScryptDurations(dummy.ms);
    this.#verifyPassword = options.verifyPassword ?? verifyPassword;
    this.#hashing = options.hashing;
  }

  /**
   * Makes the stand-in hash at the cost most of `userHashes` have (the default cost when there are none), timing its
   * making: the first measure of what a check costs. The users as they are at start decide it; a restart after the
   * users' hashes all changed cost picks the new one.
   */
  static async create(options: PasswordCheckOptions, userHashes: Iterable<string> = []): Promise<EqualTimePasswordCheck> {
    const started = performance.now();
    const hash = await hashPassword('not a password: stands in for unknown users', prevalentParams(userHashes) ?? DEFAULT_SCRYPT_PARAMS);
    return new EqualTimePasswordCheck({ hash, ms: performance.now() - started }, options);
  }

  /** The stand-in hash's parameters (`scrypt$ln=15,r=8,p=1`): what an unknown name's check is made to cost. */
  get standInCost(): string {
    return this.#dummyCost;
  }

  /** Whether `password` matches `encoded`; `encoded` undefined (no such user): false, as late as a real check. */
  matches(password: string, encoded: string | undefined, clientAddress: string): Promise<boolean> {
    const check = encoded !== undefined ? () => this.#verify(password, encoded) : () => this.#standIn(password);
    return this.#hashing ? this.#hashing.run(clientAddress, check) : check();
  }

  /** A real check; one at the stand-in hash's cost tells the stand-in how long a check takes now. */
  async #verify(password: string, encoded: string): Promise<boolean> {
    const started = performance.now();
    const matches = await this.#verifyPassword(password, encoded);
    if (costOf(encoded) === this.#dummyCost) this.#durations.observe(performance.now() - started);
    return matches;
  }

  /** An unknown name's check: mostly a wait, now and then a real scrypt against the stand-in hash. Never a match. */
  async #standIn(password: string): Promise<false> {
    if (this.#durations.sampleNow()) await this.#verify(password, this.#dummyHash);
    else await standInWait(this.#durations.draw());
    return false;
  }
}

/** The scrypt parameters most of `hashes` were made with; undefined when none is a well-formed hash. */
function prevalentParams(hashes: Iterable<string>): ScryptParams | undefined {
  const counts = new Map<string, { params: ScryptParams; count: number }>();
  for (const encoded of hashes) {
    const decoded = decode(encoded);
    if (decoded === null) continue;
    const cost = costOf(encoded);
    const known = counts.get(cost);
    if (known === undefined) counts.set(cost, { params: decoded.params, count: 1 });
    else known.count += 1;
  }
  let best: { params: ScryptParams; count: number } | undefined;
  for (const candidate of counts.values()) if (best === undefined || candidate.count > best.count) best = candidate;
  return best?.params;
}
