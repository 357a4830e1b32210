// A local user's second factors: the check a login makes of the code sent
// beside the password, and enrolment from the account API. Factors live where
// the users live (the users file or the store: factor-records.ts), so every
// instance knows them; the used TOTP steps live in the store, so a code taken
// on one instance is refused on every other (RFC 6238 5.2). A refusal is
// null, whatever its reason: the login turns it into the password's refusal,
// and its throttle counts it the same. Enrolment confirmed and a recovery code
// used are recorded in the audit trail with the user as actor (users-audit.ts
// names the factor, never its secret or a code).
import { createHash } from 'node:crypto';
import { userActor, type AuditRecorder } from '../audit/recorder.js';
import { recordedChange } from '../users/users-audit.js';
import type { FactorsRecord } from '../users/factor-records.js';
import { confirmTotpEnrolment, startTotpEnrolment, useRecoveryCode } from '../users/factor-changes.js';
import { UsersChangeError } from '../users/users-changes.js';
import type { UsersChange } from '../users/users-source.js';
import type { AuthMethodReference } from '../core/vocabulary.js';
import type { SecondFactorStore } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import { newRecoveryCodes, readRecoveryCode, recoveryCodeDigest } from './recovery-codes.js';
import { enrolmentPicture, isTotpCode, matchingStep, newTotpSecret, TOTP_PERIOD_S, TOTP_WINDOW } from './totp-codes.js';

/** What the factors need of the users: read one, change them where they live. */
export interface FactorUsers {
  userOf(sub: string): { username: string; factors?: FactorsRecord | undefined } | undefined;
  change(change: UsersChange): Promise<unknown>;
}

export interface SecondFactorsOptions {
  users: FactorUsers;
  store: SecondFactorStore;
  /** The name apps show beside the code (the otpauth URI's issuer). */
  issuerName?: string;
  now?: () => number;
  /** The deployment's audit trail: factors enrolled, recovery codes used. */
  trail?: AuditRecorder;
}

/** What the account API shows of a user's factors: never a secret. */
export interface FactorsSummary {
  totp: boolean;
  totpPending: boolean;
  recoveryCodesLeft: number;
  /** How many passkeys the user holds. */
  passkeys: number;
}

/** A used code is remembered as long as its step could still be accepted. */
const USED_CODE_TTL_MS = (2 * TOTP_WINDOW + 1) * TOTP_PERIOD_S * 1000;

export class SecondFactors {
  readonly #users: FactorUsers;
  readonly #store: SecondFactorStore;
  readonly #issuerName: string;
  readonly #now: () => number;
  readonly #trail: AuditRecorder | undefined;

  constructor(options: SecondFactorsOptions) {
    this.#users = options.users;
    this.#store = options.store;
    this.#issuerName = options.issuerName ?? 'Gatehouse';
    this.#now = options.now ?? (() => Date.now());
    this.#trail = options.trail;
  }

  summary(sub: string): FactorsSummary {
    const factors = this.#users.userOf(sub)?.factors;
    return {
      totp: factors?.totp !== undefined,
      totpPending: factors?.totpPending !== undefined,
      recoveryCodesLeft: factors?.recoveryCodes?.length ?? 0,
      passkeys: factors?.passkeys?.length ?? 0,
    };
  }

  /** Whether the user has a confirmed second factor. */
  enrolled(sub: string): boolean {
    return this.#users.userOf(sub)?.factors?.totp !== undefined;
  }

  /**
   * The `amr` a valid code adds (`otp`), or null: no factor, a wrong code, a
   * code already used (here or on another instance), a recovery code used up.
   */
  async check(sub: string, typed: string): Promise<AuthMethodReference | null> {
    const user = this.#users.userOf(sub);
    const factors = user?.factors;
    if (user === undefined || factors?.totp === undefined) return null;
    if (isTotpCode(typed)) {
      const step = matchingStep(factors.totp.secret, typed, this.#now());
      if (step === null) return null;
      return (await this.#firstUse(sub, factors.totp.secret, step)) ? 'otp' : null;
    }
    const code = readRecoveryCode(typed);
    if (code === null || !(factors.recoveryCodes ?? []).includes(recoveryCodeDigest(code))) return null;
    try {
      await this.#change(user.username, (data) => useRecoveryCode(data, user.username, recoveryCodeDigest(code)));
      return 'otp';
    } catch (error) {
      if (error instanceof UsersChangeError) return null; // another login used it first
      throw storeUnavailable(error);
    }
  }

  /** A new secret, waiting for its first code: what the account page shows to scan. */
  async startTotp(sub: string): Promise<{ secret: string; uri: string; qrCodeSvg: string }> {
    const username = this.#username(sub);
    const secret = newTotpSecret();
    await this.#users.change((data) => startTotpEnrolment(data, username, secret, new Date(this.#now())));
    return { secret, ...(await enrolmentPicture(secret, username, this.#issuerName)) };
  }

  /** The first code confirms the waiting secret; resolves with the recovery codes (shown once), or null for a wrong code. */
  async confirmTotp(sub: string, code: string): Promise<string[] | null> {
    const username = this.#username(sub);
    const pending = this.#users.userOf(sub)?.factors?.totpPending;
    if (pending === undefined) return null;
    const step = matchingStep(pending.secret, code, this.#now());
    if (step === null || !(await this.#firstUse(sub, pending.secret, step))) return null;
    const codes = newRecoveryCodes();
    try {
      await this.#change(username, (data) => confirmTotpEnrolment(data, username, pending.secret, codes.map(recoveryCodeDigest), new Date(this.#now())));
    } catch (error) {
      if (error instanceof UsersChangeError) return null; // a newer enrolment replaced this one meanwhile
      throw error;
    }
    return codes;
  }

  /** True the first time a step of this secret is used, on any instance; the id names the secret by a digest, never itself. */
  async #firstUse(sub: string, secret: string, step: number): Promise<boolean> {
    const id = `${sub}:${createHash('sha256').update(secret).digest('base64url').slice(0, 16)}:${step}`;
    return this.#store.rememberOneTimeCode(id, USED_CODE_TTL_MS).catch((error: unknown) => {
      throw storeUnavailable(error);
    });
  }

  /** A change of `username`'s factors, recorded with them as its actor when there is a trail. */
  #change(username: string, change: UsersChange): Promise<unknown> {
    if (!this.#trail) return this.#users.change(change);
    return recordedChange((next) => this.#users.change(next), change, { recorder: this.#trail, actor: userActor(username) });
  }

  #username(sub: string): string {
    const user = this.#users.userOf(sub);
    if (user === undefined) throw new UsersChangeError('unknown_user', 'no such user');
    return user.username;
  }
}
