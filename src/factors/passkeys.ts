// Passkeys (WebAuthn, through @simplewebauthn/server): a signed-in user
// registers one (options, then the browser's answer), and a login presents one
// (options, then the assertion), as a second factor or on its own. The
// credentials live with the user's factors (factor-records.ts); each challenge
// lives in the store for CHALLENGE_TTL_MS and is taken once, on any instance.
// The origin is the configured one only: an assertion a page of another origin
// obtained is refused. The signature counter must grow (a clone is refused).
// A refusal is null, whatever its reason.
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isGatehouseError } from '../core/errors.js';
import type { AuthMethodReference } from '../core/vocabulary.js';
import type { SecondFactorStore } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import { addPasskey, movePasskeyCounter } from '../users/factor-changes.js';
import { UsersChangeError } from '../users/users-changes.js';
import type { FactorUsers } from './second-factors.js';

export interface PasskeysOptions {
  users: FactorUsers;
  store: SecondFactorStore;
  /** The page's origin (`account.passkeys.origin`); its host is the relying party id. */
  origin: string;
  rpName?: string;
}

/** What a passkey login proved: whose, and how (`hwk` or `swk`, and `user` for the verification the key made). */
export interface PasskeyProof {
  sub: string;
  username: string;
  amr: AuthMethodReference[];
}

/** Long enough to touch a key or read a fingerprint, short enough that an unused challenge is soon gone. */
export const CHALLENGE_TTL_MS = 5 * 60_000;
const CHALLENGE_SHAPE = /^[A-Za-z0-9_-]{16,128}$/;

export class Passkeys {
  readonly #users: FactorUsers;
  readonly #store: SecondFactorStore;
  readonly #origin: string;
  readonly #rpId: string;
  readonly #rpName: string;

  constructor(options: PasskeysOptions) {
    this.#users = options.users;
    this.#store = options.store;
    this.#origin = new URL(options.origin).origin;
    this.#rpId = new URL(options.origin).hostname;
    this.#rpName = options.rpName ?? 'Gatehouse';
  }

  count(sub: string): number {
    return this.#users.userOf(sub)?.factors?.passkeys?.length ?? 0;
  }

  async registrationOptions(sub: string): Promise<PublicKeyCredentialCreationOptionsJSON | null> {
    const user = this.#users.userOf(sub);
    if (user === undefined) return null;
    const options = await generateRegistrationOptions({
      rpName: this.#rpName,
      rpID: this.#rpId,
      userName: user.username,
      userID: new TextEncoder().encode(sub),
      attestationType: 'none',
      excludeCredentials: (user.factors?.passkeys ?? []).map((key) => ({ id: key.id })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    });
    await this.#issue(`register:${sub}`, options.challenge);
    return options;
  }

  /** True when the passkey joined the user's. */
  async register(sub: string, response: RegistrationResponseJSON): Promise<boolean> {
    const user = this.#users.userOf(sub);
    if (user === undefined) return false;
    const verified = await this.#refusedAsNull(() =>
      verifyRegistrationResponse({
        response,
        expectedChallenge: (challenge) => this.#take(`register:${sub}`, challenge),
        expectedOrigin: this.#origin,
        expectedRPID: this.#rpId,
        requireUserVerification: true,
      }),
    );
    if (!verified?.verified) return false;
    const { credential, credentialDeviceType, credentialBackedUp } = verified.registrationInfo;
    const passkey = {
      id: credential.id,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      kind: credentialDeviceType === 'multiDevice' || credentialBackedUp ? ('swk' as const) : ('hwk' as const),
      ...(credential.transports !== undefined && { transports: credential.transports }),
      createdAt: new Date().toISOString(),
    };
    return this.#changed(() => this.#users.change((data) => addPasskey(data, user.username, passkey)));
  }

  async authenticationOptions(): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const options = await generateAuthenticationOptions({ rpID: this.#rpId, userVerification: 'required' });
    await this.#issue('login', options.challenge);
    return options;
  }

  /** Whose passkey signed the challenge (the user handle names them: a discoverable credential), or null. */
  async authenticate(response: AuthenticationResponseJSON): Promise<PasskeyProof | null> {
    const handle = response.response.userHandle;
    if (handle === undefined) return null;
    const sub = Buffer.from(handle, 'base64url').toString('utf8');
    const user = this.#users.userOf(sub);
    const key = user?.factors?.passkeys?.find((held) => held.id === response.id);
    if (user === undefined || key === undefined) return null;
    const verified = await this.#refusedAsNull(() =>
      verifyAuthenticationResponse({
        response,
        expectedChallenge: (challenge) => this.#take('login', challenge),
        expectedOrigin: this.#origin,
        expectedRPID: this.#rpId,
        credential: { id: key.id, publicKey: Buffer.from(key.publicKey, 'base64url'), counter: key.counter },
        requireUserVerification: true,
      }),
    );
    if (!verified?.verified) return null;
    const { newCounter } = verified.authenticationInfo;
    // A key that counts (most do not: 0 forever) moves its counter; of two logins racing with one count, one wins.
    if (newCounter > 0 && !(await this.#changed(() => this.#users.change((data) => movePasskeyCounter(data, user.username, key.id, newCounter))))) return null;
    return { sub, username: user.username, amr: [key.kind, 'user'] };
  }

  /** The challenge, remembered as issued for its lifetime, on every instance. */
  async #issue(scope: string, challenge: string): Promise<void> {
    await this.#remember(`passkey-issued:${scope}:${challenge}`);
  }

  /**
   * True once for a challenge issued for this scope and still alive: the
   * first to mark it used wins, and a challenge never issued is refused
   * (marking it "issued" now succeeds, which it must not have).
   */
  async #take(scope: string, challenge: string): Promise<boolean> {
    if (!CHALLENGE_SHAPE.test(challenge)) return false;
    if (!(await this.#remember(`passkey-used:${scope}:${challenge}`))) return false;
    return !(await this.#remember(`passkey-issued:${scope}:${challenge}`));
  }

  #remember(id: string): Promise<boolean> {
    return this.#store.rememberOneTimeCode(id, CHALLENGE_TTL_MS).catch((error: unknown) => {
      throw storeUnavailable(error);
    });
  }

  /** The library throws for every refusal (origin, challenge, signature, counter); ours (a store outage) go on. */
  async #refusedAsNull<T>(verify: () => Promise<T>): Promise<T | null> {
    try {
      return await verify();
    } catch (error) {
      if (isGatehouseError(error)) throw error;
      return null;
    }
  }

  async #changed(change: () => Promise<unknown>): Promise<boolean> {
    try {
      await change();
      return true;
    } catch (error) {
      if (error instanceof UsersChangeError) return false;
      throw storeUnavailable(error);
    }
  }
}
